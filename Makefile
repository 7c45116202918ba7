# qualkit: image-edit qualification as `go test`.
#   make qual   set up if needed, qualify the built-in reference family, print the table
#   make test   everything CI runs, through gotestsum, with the skip/count gate

SHELL := /bin/bash
GO ?= go
export CGO_CFLAGS ?= -Wno-deprecated-declarations
JUNIT ?= evidence/junit.xml
RUNTIME ?= auto
export RUNTIME
# The fewest tests a complete `make test` runs; raise it when tests are added.
MIN_TESTS ?= 600
# Tables whose rows need hardware CI never has (GPU, TRTMC). `make test` leaves them out
# with -skip (not run, so not counted as skips) and runs their preflight unit tests instead.
HARDWARE_ROWS := ^(TestQwenImageEdit|TestReferenceSmoke)$$
STAGES := preflight build correctness serve benchmark influence identity report
REQUIRED := $(foreach s,$(STAGES),-require qualkit/qual/TestRefEdit/refedit-v1/$(s))

.PHONY: setup qual test pytest lint bench fmt clean-evidence

setup:
	@bash scripts/setup.sh

qual: setup
	@mkdir -p evidence
	$(GO) tool gotestsum --format testname --junitfile evidence/junit-qual.xml -- \
		-count=1 -run '^TestRefEdit$$' ./qual/ || { echo "qualification FAILED: see evidence/latest/SUMMARY.md"; exit 1; }
	$(GO) run ./scripts/testgate -junit evidence/junit-qual.xml -min 9 $(REQUIRED)
	$(GO) run ./scripts/checkevidence -dir evidence/latest -junit evidence/junit-qual.xml
	@echo "evidence: $$(readlink -f evidence/latest) (SUMMARY.md, PR.md, index.html)"

test: setup lint pytest
	@mkdir -p $(dir $(JUNIT))
	$(GO) tool gotestsum --format testname --junitfile $(JUNIT) -- -race -count=1 -skip '$(HARDWARE_ROWS)' ./...
	$(GO) run ./scripts/testgate -junit $(JUNIT) -min $(MIN_TESTS) $(REQUIRED)

# The Python side: the refedit reference's self-tests (incl. tampered bundles) and the
# fixture manifest checks. Same rule: no skips.
PYJUNIT ?= evidence/junit-python.xml
pytest: setup
	@mkdir -p $(dir $(PYJUNIT))
	.venv/bin/python -m pytest -q -p no:cacheprovider --rootdir . --junitxml=$(PYJUNIT) \
		families/refedit/correctness/selftest fixtures/image_edit
	$(GO) run ./scripts/testgate -junit $(PYJUNIT) -min 80

lint:
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/harness/ ./families/refedit/...

clean-evidence:
	rm -rf evidence

TRTMC ?= ../shared/trtmc-main-e9132e79
.PHONY: inventory
inventory:
	$(GO) run ./scripts/inventory -trtmc $(TRTMC) -out .

.PHONY: doctor
doctor:
	@$(GO) test -v -count=1 ./qual/ -args -qualkit.doctor | grep -vE "^(ok|PASS)\b"

# Hostile input: each fuzz target for FUZZTIME. Not part of `make test`: the seed
# corpora under testdata/fuzz run there as ordinary tests.
FUZZTIME ?= 60s
.PHONY: fuzz
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzEditRequest$$' -fuzztime $(FUZZTIME) -parallel 2 ./families/refedit/server
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeAndApply$$' -fuzztime $(FUZZTIME) -parallel 2 ./families/refedit/edit

# Evidence: check a run folder (default: the newest), write its PR summary.
DIR ?= evidence/latest
.PHONY: check-evidence pr-summary test-html
check-evidence:
	$(GO) run ./scripts/checkevidence -dir $(DIR) $(if $(JUNIT_FILE),-junit $(JUNIT_FILE))
pr-summary:
	$(GO) run ./scripts/prsummary -dir $(DIR) -trtmc $(TRTMC)
test-html:   # needs: apt-get install -y chromium
	$(GO) test -tags chromium -run TestIndexInChromium -count=1 ./internal/prsummary/
