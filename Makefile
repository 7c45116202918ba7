# qualkit: image-edit qualification as `go test`.
#   make qual   set up if needed, qualify the built-in reference family, print the table
#   make test   everything CI runs, through gotestsum, with the skip/count gate

SHELL := /bin/bash
GO ?= go
export CGO_CFLAGS ?= -Wno-deprecated-declarations
JUNIT ?= evidence/junit.xml
RUNTIME ?= auto
export RUNTIME
# The reaper image cannot be pulled here; the harness removes what it starts.
export TESTCONTAINERS_RYUK_DISABLED ?= true
# TRTMC=DIR: a TRTMC checkout (or its data, such as ../shared/trtmc-main-e9132e79) whose
# real data the trtmcdata-tagged tests check, and that `make inventory` reads.
TRTMC ?=
ifneq ($(TRTMC),)
TAGS := -tags trtmcdata
export QUALKIT_TRTMC_DATA := $(abspath $(TRTMC))
endif
# The fewest tests a complete `make test` runs; raise it when tests are added.
MIN_TESTS ?= 600
# Tables whose rows need hardware CI never has (GPU, TRTMC). `make test` leaves them out
# with -skip (not run, so not counted as skips) and runs their preflight unit tests instead.
HARDWARE_ROWS := ^(TestQwenImageEdit|TestReferenceSmoke)$$
STAGES := preflight build correctness serve benchmark influence identity report
REQUIRED := $(foreach s,$(STAGES),-require qualkit/qual/TestRefEdit/refedit-v1/$(s))

.PHONY: setup engine qual test pytest lint bench fmt clean-evidence

setup:
	@bash scripts/setup.sh

# A Docker engine that answers: installed and started here when this machine can
# (root, apt), else a message with the exact commands.
engine:
	@bash scripts/engine.sh

qual: setup
	@mkdir -p evidence
	$(GO) tool gotestsum --format standard-verbose --junitfile evidence/junit-qual.xml -- \
		-count=1 -run '^TestRefEdit$$' ./qual/ || { echo "qualification FAILED: see evidence/latest/SUMMARY.md"; exit 1; }
	$(GO) run ./scripts/testgate -junit evidence/junit-qual.xml -min 9 $(REQUIRED)
	$(GO) run ./scripts/checkevidence -dir evidence/latest -junit evidence/junit-qual.xml
	@echo "evidence: $$(readlink -f evidence/latest) (SUMMARY.md, PR.md, index.html)"

test: setup engine lint pytest
	@mkdir -p $(dir $(JUNIT))
	@if [ -z "$(TRTMC)" ]; then echo "test: the real-TRTMC-data checks are not run: give TRTMC=DIR (a TRTMC checkout, or ../shared/trtmc-main-e9132e79) to run them"; \
		else echo "test: real-TRTMC-data checks on $(QUALKIT_TRTMC_DATA)"; fi
	$(GO) tool gotestsum --format testname --junitfile $(JUNIT) -- $(TAGS) -race -count=1 -skip '$(HARDWARE_ROWS)' ./...
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
	$(GO) vet -tags trtmcdata ./...
	$(GO) tool staticcheck -tags trtmcdata ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/harness/ ./families/refedit/...

clean-evidence:
	rm -rf evidence

.PHONY: inventory
inventory:
	@test -n "$(TRTMC)" || { echo "make inventory TRTMC=DIR: name a TRTMC checkout (or ../shared/trtmc-main-e9132e79)"; exit 2; }
	$(GO) run ./scripts/inventory -trtmc $(TRTMC) -out .

# Readiness of the rows RUN selects (a go test -run pattern; default all): exit 1 when
# one is not ready. JSON=1 prints JSON for scripts.
RUN ?=
.PHONY: doctor
doctor:
	@mkdir -p .cache/bin
	@$(GO) test -c -o .cache/bin/qual.test ./qual
	@cd qual && ../.cache/bin/qual.test -test.run '$(RUN)' -qualkit.doctor $(if $(JSON),-qualkit.json)

# Past runs: every run under evidence/ with its rows' status; B against A (the
# baseline), exit 1 on a regression.
.PHONY: runs compare
runs:
	@$(GO) run ./scripts/runs list -root evidence
compare:
	@test -n "$(A)" -a -n "$(B)" || { echo "make compare A=<run> B=<run>: run ids under evidence/ or run folders"; exit 2; }
	@$(GO) run ./scripts/runs compare -root evidence $(A) $(B)

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
	$(GO) run ./scripts/checkevidence -dir $(DIR) $(if $(JUNIT_FILE),-junit $(JUNIT_FILE)) $(if $(SUMS),-sums $(SUMS))
pr-summary:
	$(GO) run ./scripts/prsummary -dir $(DIR) $(if $(TRTMC),-trtmc $(TRTMC))
test-html:   # needs: apt-get install -y chromium
	$(GO) test -tags chromium -run TestIndexInChromium -count=1 ./internal/prsummary/
