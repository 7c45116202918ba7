# qualkit: image-edit qualification as `go test`.
#   make qual   set up if needed, qualify the built-in reference family, print the table
#   make test   everything CI runs, through gotestsum, with the skip/count gate

SHELL := /bin/bash
GO ?= go
export CGO_CFLAGS ?= -Wno-deprecated-declarations
JUNIT ?= evidence/junit.xml
# gotestsum's own file, kept before scripts/junitfix rewrites JUNIT: its times are each
# test's whole wall and each package's, which make test-times reports.
JUNIT_RAW ?= evidence/junit.gotestsum.xml
# go test's own -timeout for `make test`: its default (10 min) is what the qual package
# alone took on a busy 2-core machine (660 s, killed after PASS). 30 min is ~3x that.
TEST_TIMEOUT ?= 30m
# The packages make test runs with -race: those whose code runs goroutines (the harness,
# its serving and GPU pool, the overlapped order's background commands, the contract
# double, the reference server), each driven by its own tests. Without it: the qual rows
# (subprocess-bound end to end: the same harness code, whose concurrency the harness's
# tests race-check with the fake family, rows side by side, signals and the overlapped
# order included; under -race the package took 799 s of a 17-minute run at 5a431ba,
# without it 447 s at 0295a35, docs/test-times.md), and the single-threaded checker,
# reports and tools (scripts/gotest.sh).
RACE_PKGS ?= ./internal/harness/... ./families/qwen_image/trtmcdouble/... ./families/refedit/server/ ./families/refedit/cmd/refedit/
# When make started: `make test` ends by printing its whole wall, set-up included.
STARTED := $(shell date +%s)
RUNTIME ?= auto
export RUNTIME
# The reaper image cannot be pulled here; the harness removes what it starts.
export TESTCONTAINERS_RYUK_DISABLED ?= true
# TRTMC=DIR: a TRTMC checkout (or its data, such as ../shared/trtmc-main-e9132e79) whose
# real data the trtmcdata-tagged tests check, and that `make inventory` reads.
TRTMC ?=
GO_TAGS :=
ifneq ($(TRTMC),)
GO_TAGS += trtmcdata
export QUALKIT_TRTMC_DATA := $(abspath $(TRTMC))
endif
# TRTMC_PERF_SERVE=DIR: a snapshot of TRTMC's own perf-serve (../shared/trtmc-perf-serve,
# which CI gives): the Qwen double table then gains the row TRTMC's own trtmc_perf_serving
# serves, and the conformance test holds the recording the double replays to it.
TRTMC_PERF_SERVE ?=
ifneq ($(TRTMC_PERF_SERVE),)
GO_TAGS += trtmcperfserve
export QUALKIT_TRTMC_PERF_SERVE := $(abspath $(TRTMC_PERF_SERVE))
endif
comma := ,
GO_TAG_LIST := $(subst $(eval) ,$(comma),$(strip $(GO_TAGS)))
TAGS := $(if $(GO_TAG_LIST),-tags $(GO_TAG_LIST))
# The qualification tables are listed once (qual/tables_test.go); `make tables` writes
# them as JSON, and the -skip pattern of the hardware tables (rows that need a GPU or
# TRTMC, which CI never has) and the stage subtests the gate expects derive from it.
TABLES := .cache/tables.json
QUALTEST := .cache/bin/qual.test

.PHONY: setup engine double-image browser tables qual test pytest lint bench fmt clean-evidence

# Signing (internal/attest): SIGN_KEY=FILE, or QUALKIT_SIGNING_KEY (the PEM or its path),
# signs each run `make qual` and `make shard` make, after its check passed; PUBKEY=FILE
# verifies signatures (check-evidence, merge-evidence); STRICT=1 makes check-evidence
# refuse an unsigned or unverified run. Make a key pair: go run ./scripts/attest keygen (~/.config/qualkit/ci.pem)
SIGN_KEY ?=
PUBKEY ?=
STRICT ?=
# The qual tests see the signing key too: a bundle another run built is reused only when
# that run is signed by it (internal/report Evidence.Vouch).
KEY_ENV = $(if $(SIGN_KEY),QUALKIT_SIGNING_KEY=$(abspath $(SIGN_KEY)))
# sign DIR JUNIT: sign the run when a key is given, else say it is unsigned.
define sign
	@if [ -n "$(SIGN_KEY)" ] || [ -n "$$QUALKIT_SIGNING_KEY" ]; then \
		$(GO) run ./scripts/attest sign -dir $(1) -junit $(2) $(if $(SIGN_KEY),-key $(SIGN_KEY)); \
	else echo "evidence not signed: give SIGN_KEY=FILE or QUALKIT_SIGNING_KEY to sign it (make one: go run ./scripts/attest keygen)"; fi
endef

setup:
	@bash scripts/setup.sh

# A Docker engine that answers: installed and started here when this machine can
# (root, apt), else a message with the exact commands.
engine:
	@bash scripts/engine.sh

# The TRTMC contract double's Python image (real Python, pytest at TRTMC's pin, CMake),
# made once per machine and engine: Debian by mmdebstrap, the pinned wheels offline.
double-image: engine
	@bash scripts/double-image.sh

# The headless Chromium of index.html's browser test (internal/prsummary).
browser:
	@bash scripts/browser.sh

tables:
	@mkdir -p $(dir $(QUALTEST))
	@$(GO) test -c -o $(QUALTEST) ./qual
	@cd qual && ../$(QUALTEST) -qualkit.tables > ../$(TABLES)

# A failed run is evidence too: its JUnit is fixed and kept, the test gate and the
# evidence checker run on it all the same (its evidence must check), and make qual exits 1.
qual: setup tables
	@mkdir -p evidence
	@before=$$(readlink evidence/latest || true); status=0; \
	echo "$(GO) tool gotestsum --format standard-verbose --junitfile evidence/junit-qual.xml -- -count=1 -run '^TestRefEdit$$' ./qual/"; \
	$(KEY_ENV) $(GO) tool gotestsum --format standard-verbose --junitfile evidence/junit-qual.xml -- -count=1 -run '^TestRefEdit$$' ./qual/ || status=1; \
	if [ "$$(readlink evidence/latest || true)" = "$$before" ]; then \
		echo "qualification FAILED before any run folder was made (evidence/latest did not move): see the output above"; exit 1; fi; \
	$(GO) run ./scripts/junitfix -junit evidence/junit-qual.xml -run evidence/latest || status=1; \
	cp evidence/junit-qual.xml "$$(readlink -f evidence/latest).junit.xml"; \
	$(GO) run ./scripts/testgate -junit evidence/junit-qual.xml -tables $(TABLES) -table TestRefEdit || status=1; \
	echo "$(GO) run ./scripts/checkevidence -dir evidence/latest -junit evidence/junit-qual.xml"; \
	$(GO) run ./scripts/checkevidence -dir evidence/latest -junit evidence/junit-qual.xml || status=1; \
	if [ $$status != 0 ]; then echo "qualification FAILED: see evidence/latest/SUMMARY.md ($$(readlink -f evidence/latest))"; exit 1; fi
	$(call sign,evidence/latest,evidence/junit-qual.xml)
	@echo "evidence: $$(readlink -f evidence/latest) (SUMMARY.md, PR.md, index.html)"

# lint and the Python tests run beside go test, at the lower priority of go test's other
# runs (scripts/gotest.sh): the qual rows come first; when qual ends, gotest.sh raises them
# back with its own (BESIDE). Their output follows go test's
# (CHECKS_LOG), and either failing fails make test.
CHECKS_LOG ?= evidence/checks.log
test: setup engine double-image browser tables
	@mkdir -p $(dir $(JUNIT))
	@if [ -z "$(TRTMC)" ]; then echo "test: the real-TRTMC-data checks are not run: give TRTMC=DIR (a TRTMC checkout, or ../shared/trtmc-main-e9132e79) to run them"; \
		else echo "test: real-TRTMC-data checks on $(QUALKIT_TRTMC_DATA)"; fi
	@if [ -z "$(TRTMC_PERF_SERVE)" ]; then echo "test: TRTMC's own perf-serve is not run (its row and the conformance test): give TRTMC_PERF_SERVE=DIR (../shared/trtmc-perf-serve) to run them"; \
		else echo "test: TRTMC's own perf-serve from $(QUALKIT_TRTMC_PERF_SERVE): its row and the conformance test run"; fi
	@echo "test: leaving out the hardware tables: -skip '$$($(GO) run ./scripts/testgate skip -tables $(TABLES))'"
	@echo "test: -race on $(RACE_PKGS) (where concurrency lives), the other packages (./qual/ among them) without it (scripts/gotest.sh)"
	@echo "test: the qual package first; the other packages, lint and the Python tests (make lint pytest) beside it at a lower priority; their output follows ($(CHECKS_LOG))"
	@rm -f $(PYJUNIT); ( nice -n 10 $(MAKE) --no-print-directory lint pytest > $(CHECKS_LOG) 2>&1; echo $$? > $(CHECKS_LOG).rc ) & checks=$$!; \
	BESIDE=$$checks SKIP="$$($(GO) run ./scripts/testgate skip -tables $(TABLES))" RACE_PKGS="$(RACE_PKGS)" TEST_TIMEOUT=$(TEST_TIMEOUT) TAGS="$(TAGS)" \
		$(GO) tool gotestsum --format testname --junitfile $(JUNIT) --raw-command -- bash scripts/gotest.sh; status=$$?; \
	wait $$checks; echo "--- make lint pytest ($(CHECKS_LOG)):"; cat $(CHECKS_LOG); \
	if [ "$$(cat $(CHECKS_LOG).rc)" != 0 ]; then echo "test: make lint pytest FAILED"; status=1; fi; \
	cp $(JUNIT) $(JUNIT_RAW); $(GO) run ./scripts/junitfix -junit $(JUNIT) || status=1; \
	$(GO) run ./scripts/testgate -junit $(JUNIT) -tables $(TABLES) -go ./... $(if $(GO_TAG_LIST),-tags $(GO_TAG_LIST)) || status=1; \
	t=$$(( $$(date +%s) - $(STARTED) )); echo "make test: $$((t / 60)) min $$((t % 60)) s, set-up included"; \
	$(GO) run ./scripts/testgate failed $(JUNIT) $(PYJUNIT); \
	if [ $$status != 0 ]; then echo "make test: FAILED (the list above)"; fi; exit $$status

# Rerun only what failed in make test's last JUnit ($(JUNIT)), each failed top-level test
# once (a row runs whole, so a failed stage reruns its table's test), writing
# evidence/junit-rerun.xml. Each is reported FAILED again, FLAKY (it passed with the tree
# unchanged since the failed run: exit 1, never a pass), or passed after changes.
.PHONY: test-failed
test-failed: setup engine double-image tables
	@$(GO) run ./scripts/testgate rerun -junit $(JUNIT) -out evidence/junit-rerun.xml $(if $(GO_TAG_LIST),-tags $(GO_TAG_LIST))

# The Python side: the refedit reference's self-tests (incl. tampered bundles), the
# openai client's images.edit against the refedit server (it builds the binary with
# $(GO)), and the fixture manifest checks. Same rule: no skips. They use no pytest
# plugin, so none of the venv's is loaded (PYTEST_DISABLE_PLUGIN_AUTOLOAD, as in the
# refedit case). Their temp folders go with the run (pytest keeps its own /tmp/pytest-of-*).
PYJUNIT ?= evidence/junit-python.xml
PYTESTS := families/refedit/correctness/selftest families/refedit/server/testdata/openai_client fixtures/images fixtures/image_edit internal/quality/testdata internal/junitfix/testdata families/qwen_image/latents/testdata
pytest: setup
	@mkdir -p $(dir $(PYJUNIT))
	PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 .venv/bin/python -m pytest --collect-only -q -p no:cacheprovider --rootdir . $(PYTESTS) > $(PYJUNIT).collected
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	GO=$(GO) PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 .venv/bin/python -m pytest -q -p no:cacheprovider --basetemp "$$tmp/pytest" --rootdir . --junitxml=$(PYJUNIT) $(PYTESTS)
	$(GO) run ./scripts/testgate -junit $(PYJUNIT) -pytest $(PYJUNIT).collected

lint:
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet -tags mktestdata,trtmcdata,trtmcperfserve ./...
	$(GO) tool staticcheck -tags mktestdata,trtmcdata,trtmcperfserve ./...

# The inner loop while working (scripts/checkpkgs): gofmt, vet and staticcheck of the
# packages changed since BASE (default HEAD: the work not yet committed), then go test
# -short of those and of every package that imports them: no containers, no AIPerf, no
# qual rows (-short skips the tests that need them; of qual only the tests that run no
# row). The stages' judges (the harness's TestJudge tests: each stage's decisions on
# values alone) and the README recipes' check (each command block equals its script,
# scripts/recipes) run every time, whatever changed. `make test` stays the whole thing CI runs.
BASE ?= HEAD
.PHONY: check
check:
	@$(GO) run ./scripts/checkpkgs -base $(BASE)

bench: setup engine
	$(GO) test -run '^$$' -bench . -benchmem ./internal/harness/ ./families/refedit/...
	$(GO) test -run '^$$' -bench RefEditRow -benchtime 1x ./qual/

clean-evidence:
	rm -rf evidence

# Where make test's time went (its JUnit): each package's wall and the slowest tests,
# written to TEST_TIMES (default evidence/test-times.md, ignored; the committed one:
# TEST_TIMES=docs/test-times.md, from a fresh-clone make test).
TEST_TIMES ?= evidence/test-times.md
.PHONY: test-times
test-times:
	@{ echo "# Test times"; echo; echo "From \`make test\`'s $(JUNIT_RAW) (\`make test-times\` writes this file)."; echo; \
		$(GO) run ./scripts/testtimes -junit $(JUNIT_RAW); } > $(TEST_TIMES)
	@cat $(TEST_TIMES)

.PHONY: inventory
# INVENTORY_OUT: where INVENTORY.md and inventory.json go; by default evidence/inventory/
# (ignored), so inventorying your own checkout leaves the tree clean. The committed files
# are TRTMC main e9132e79's: make inventory TRTMC=../shared/trtmc-main-e9132e79 INVENTORY_OUT=.
INVENTORY_OUT ?= evidence/inventory
inventory: tables
	@test -n "$(TRTMC)" || { echo "make inventory TRTMC=DIR: name a TRTMC checkout (or ../shared/trtmc-main-e9132e79)"; exit 2; }
	@mkdir -p $(INVENTORY_OUT)
	$(GO) run ./scripts/inventory -trtmc $(TRTMC) -out $(INVENTORY_OUT)
	@echo "inventory: $(INVENTORY_OUT)/INVENTORY.md and $(INVENTORY_OUT)/inventory.json"

# The real Qwen adapter through every stage against the TRTMC contract double, in each
# serving shape CI drives (also part of `make test`). Its rows read passed-contract-double.
# With TRTMC_PERF_SERVE the table has the row TRTMC's own perf-serve serves, and the
# conformance test (qual/trtmc_recording_test.go, its build tag: the recording the perf-serve
# row replays is current) runs too and must pass.
QWEN_DOUBLE_RUN = ^TestTRTMCDouble$$$(if $(TRTMC_PERF_SERVE),|^TestPerfServeConformance$$)
.PHONY: qwen-double
qwen-double: setup engine double-image tables
	@mkdir -p evidence
	$(GO) tool gotestsum --format standard-verbose --junitfile evidence/junit-qwen-double.xml -- \
		$(TAGS) -count=1 -run '$(QWEN_DOUBLE_RUN)' ./qual/ || { $(GO) run ./scripts/junitfix -junit evidence/junit-qwen-double.xml; exit 1; }
	$(GO) run ./scripts/junitfix -junit evidence/junit-qwen-double.xml
	$(GO) run ./scripts/testgate -junit evidence/junit-qwen-double.xml -tables $(TABLES) -table TestTRTMCDouble \
		$(if $(TRTMC_PERF_SERVE),-test qualkit/qual/TestPerfServeConformance)
	$(GO) run ./scripts/checkevidence -dir evidence/latest -junit evidence/junit-qwen-double.xml

# Re-records what TRTMC's own perf-serve answers the double's perf-serve row, which the
# double replays without it (families/qwen_image/trtmcdouble/testdata/perfserve): the row
# qwen-double-trtmc-perf-serve, then TestPerfServeConformance writing the recording.
.PHONY: perf-serve-recording
perf-serve-recording: setup engine double-image tables
	@test -n "$(TRTMC_PERF_SERVE)" || { echo "make perf-serve-recording TRTMC_PERF_SERVE=DIR: name TRTMC's perf-serve (../shared/trtmc-perf-serve)"; exit 2; }
	$(GO) test $(TAGS) -count=1 -run '^(TestTRTMCDouble|TestPerfServeConformance)$$/^qwen-double-trtmc-perf-serve$$' ./qual/ -args -qualkit.record-perf-serve
	@du -sh families/qwen_image/trtmcdouble/testdata/perfserve

# The image the Qwen row runs in on capable hardware (families/qwen_image/README.md's
# example): TRTMC's dev image from QUALKIT_TRTMC_DIR's checkout, built from the context the
# row stages (never the checkout root, which fails on both layouts), then
# families/qwen_image/docker/Dockerfile.reference on it, tagged QUALKIT_TRTMC_IMAGE.
.PHONY: trtmc-image
trtmc-image:
	@$(GO) run ./families/qwen_image/cmd/trtmcimage

# Readiness of the rows RUN selects (a go test -run pattern; default all): exit 1 when
# one is not ready. JSON=1 prints JSON for scripts.
RUN ?=
.PHONY: doctor
doctor:
	@mkdir -p $(dir $(QUALTEST))
	@$(GO) test -c -o $(QUALTEST) ./qual
	@cd qual && ../$(QUALTEST) -test.run '$(value RUN)' -qualkit.doctor $(if $(JSON),-qualkit.json)

# The CI matrix (scripts/matrix, docs/ci/qualkit-matrix.yml): one job per row RUN selects
# (default all), GPU rows first, then the longest by past runs; each job's command is
# `make shard` for its row. RUN is read with $(value RUN): a pattern's `$/` must reach
# go test as typed, not as a make variable.
SHARD ?=
.PHONY: matrix shard
matrix: tables
	@$(GO) run ./scripts/matrix -tables $(TABLES) $(if $(value RUN),-run '$(value RUN)')

# One matrix job: the rows RUN selects (the matrix gives each row's exact pattern), then
# the evidence check of the run they made, then the run folder and its JUnit copied to
# evidence/shards/SHARD/ (<run id>/ and junit.xml), which the merge step takes. The copy
# is made when a row failed too (a failed row is evidence); the exit status is the tests'
# and the check's. QUALARGS go to the qual test binary after -args: for a row whose
# public run met a hardware limit, QUALARGS=-qualkit.correctness-only on a host with the
# memory runs its unchanged correctness case alone, a shard the merge keeps beside it.
# Signed, the run's statement names the shard, the matrix entry it answers (MATRIX_ENTRY,
# default SHARD) and its matrix's created time (MATRIX_CREATED, in the entry's command):
# the merge refuses it in another shard's folder or for another matrix.
QUALARGS ?=
MATRIX_CREATED ?=
MATRIX_ENTRY ?=
ifneq ($(filter shard,$(MAKECMDGOALS)),)
ifeq ($(strip $(value RUN)),)
$(error make shard: RUN is not set: give the go test -run pattern of the row to run, as `make matrix` prints it, e.g. make shard RUN='^TestRefEdit$$/^refedit-v1$$' SHARD=refedit-v1)
endif
ifeq ($(SHARD),)
$(error make shard: SHARD is not set: give the row's name, as `make matrix` prints it, e.g. SHARD=refedit-v1; it names evidence/shards/SHARD/)
endif
ifeq ($(shell printf '%s' '$(SHARD)' | grep -Ex '[a-z0-9][a-z0-9._-]*'),)
$(error make shard: SHARD='$(SHARD)' is not a shard name: give the row's name (a-z, 0-9, '.', '_', '-'), e.g. SHARD=refedit-v1; it names evidence/shards/SHARD/)
endif
endif
shard: setup engine tables
	@mkdir -p evidence
	@before=$$(readlink evidence/latest || true); status=0; \
	echo "$(GO) tool gotestsum --format standard-verbose --junitfile evidence/junit-shard-$(SHARD).xml -- -count=1 -run '$(value RUN)' ./qual/ $(if $(QUALARGS),-args $(QUALARGS))"; \
	$(KEY_ENV) $(GO) tool gotestsum --format standard-verbose --junitfile evidence/junit-shard-$(SHARD).xml -- \
		-count=1 -run '$(value RUN)' ./qual/ $(if $(QUALARGS),-args $(QUALARGS)) || { echo "shard $(SHARD) FAILED: see evidence/latest/SUMMARY.md"; status=1; }; \
	$(GO) run ./scripts/junitfix -junit evidence/junit-shard-$(SHARD).xml -run evidence/latest || status=1; \
	if [ "$$(readlink evidence/latest || true)" = "$$before" ]; then \
		echo "shard $(SHARD): the tests made no run folder (evidence/latest did not move): does RUN='$(value RUN)' select a row? (make matrix RUN=...)"; exit 1; fi; \
	echo "$(GO) run ./scripts/checkevidence -dir evidence/latest -junit evidence/junit-shard-$(SHARD).xml"; \
	$(GO) run ./scripts/checkevidence -dir evidence/latest -junit evidence/junit-shard-$(SHARD).xml || status=1; \
	if [ $$status != 0 ]; then echo "shard $(SHARD): not signed: the shard failed"; \
	elif [ -n "$(SIGN_KEY)" ] || [ -n "$$QUALKIT_SIGNING_KEY" ]; then \
		$(GO) run ./scripts/attest sign -dir evidence/latest -junit evidence/junit-shard-$(SHARD).xml $(if $(SIGN_KEY),-key $(SIGN_KEY)) \
			-shard $(SHARD) -matrix-created '$(MATRIX_CREATED)' $(if $(MATRIX_ENTRY),-matrix-entry $(MATRIX_ENTRY)) || status=1; \
	else echo "shard $(SHARD): passed, not signed: give SIGN_KEY=FILE or QUALKIT_SIGNING_KEY to sign it"; fi; \
	run=$$(readlink -f evidence/latest); cp evidence/junit-shard-$(SHARD).xml "$$run.junit.xml"; \
	rm -rf evidence/shards/$(SHARD) && mkdir -p evidence/shards/$(SHARD) && \
		cp -a "$$run" evidence/shards/$(SHARD)/ && cp evidence/junit-shard-$(SHARD).xml evidence/shards/$(SHARD)/junit.xml || exit 1; \
	echo "shard $(SHARD): evidence/shards/$(SHARD)/$$(basename "$$run")/ and evidence/shards/$(SHARD)/junit.xml"; \
	exit $$status

# The merge step: the shard folders (make shard, or CI's downloaded shard-<row>
# artifacts) into one run at OUT whose SUMMARY.md, PR.md, index.html, junit.xml and SHA256SUMS cover
# every row, each shard kept whole with its own checksums and JUnit. Refused, writing
# nothing, when a matrix row has no shard, a row is in two, or the shards ran different
# commits. A correctness-only shard (QUALARGS=-qualkit.correctness-only) is kept only
# beside the shard whose row failed as a hardware limit, as its local verification: the
# row stays failed. Check the result with make check-evidence DIR=OUT.
MATRIX ?=
SHARDS ?=
UNSIGNED ?=
OUT ?= evidence/merged
.PHONY: merge-evidence
merge-evidence:
	@test -n "$(MATRIX)" -a -n "$(SHARDS)" || { echo "make merge-evidence: give MATRIX=<the matrix JSON the shards ran> and SHARDS=\"<shard folders>\" (e.g. SHARDS=\"evidence/shards/*\"), OUT=<new folder> (default evidence/merged)"; exit 2; }
	@test -n "$(PUBKEY)$(UNSIGNED)" || { echo "make merge-evidence: give PUBKEY=<the signer's public key> (every shard must be signed: make shard SIGN_KEY=...), or UNSIGNED=1 to admit unsigned shards (named in the merged run; with PUBKEY too, a signed shard must verify)"; exit 2; }
	$(GO) run ./scripts/mergeevidence -matrix $(MATRIX) -out $(OUT) $(if $(PUBKEY),-pubkey $(PUBKEY)) $(if $(UNSIGNED),-unsigned) $(SHARDS)

# Past runs: every run under evidence/ with its rows' status; B against A (the
# baseline), exit 1 on a regression. A and B are run ids, run folders, or latest (the
# newest of make runs) and previous (the newest before it with the same rows), the
# defaults. Two runs may also follow the goal, `make compare latest previous`: the
# older is the baseline. The words after `compare` are its arguments, not goals: each
# gets an empty recipe.
COMPARE_RUNS := $(if $(filter compare,$(firstword $(MAKECMDGOALS))),$(wordlist 2,$(words $(MAKECMDGOALS)),$(MAKECMDGOALS)))
ifneq ($(COMPARE_RUNS),)
$(eval $(COMPARE_RUNS):;@:)
endif
.PHONY: runs compare
runs:
	@$(GO) run ./scripts/runs list -root evidence
compare:
	@$(if $(filter-out 0 2,$(words $(COMPARE_RUNS))),echo "make compare: name two runs (make compare latest previous) or none"; exit 2)
	@$(GO) run ./scripts/runs compare -root evidence $(if $(ACROSS),-across) \
		$(if $(COMPARE_RUNS),-by-age $(foreach r,$(COMPARE_RUNS),'$(r)'),'$(or $(A),previous)' '$(or $(B),latest)')

# Hostile input: each fuzz target for FUZZTIME. Not part of `make test`: the seed
# corpora under testdata/fuzz run there as ordinary tests.
FUZZTIME ?= 60s
.PHONY: fuzz
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzEditRequest$$' -fuzztime $(FUZZTIME) -parallel 2 ./families/refedit/server
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeAndApply$$' -fuzztime $(FUZZTIME) -parallel 2 ./families/refedit/edit

# The docs' examples (the README's table and checker line, the pictures in docs/) are
# what the current code prints for the run kept as reference-run/ in
# docs/evidence/runs.tar.zst: make
# docs rewrites them (go test ./scripts/docs fails while one is stale); make docs-run
# first makes a new run with make qual and keeps it there instead.
.PHONY: docs docs-run
docs:
	$(GO) run ./scripts/docs -write
docs-run: qual
	rm -rf .cache/runs && $(GO) run ./scripts/runarchive extract -archive docs/evidence/runs.tar.zst -out .cache/runs
	rm -rf .cache/runs/reference-run && mkdir -p .cache/runs/reference-run
	cp -a "$$(readlink -f evidence/latest)" .cache/runs/reference-run/
	cp "$$(readlink -f evidence/latest).junit.xml" docs/evidence/reference-run/junit.xml
	$(GO) run ./scripts/runarchive pack -out docs/evidence/runs.tar.zst -root .cache/runs $$(ls .cache/runs)
	rm -rf .cache/runs
	$(MAKE) docs

# Evidence: check a run folder (default: the newest), or the run IN names inside an
# archive of runs (DIR=docs/evidence/runs.tar.zst IN=h200-orders/serial/<run id>:
# docs/evidence.md), write its PR summary.
DIR ?= evidence/latest
.PHONY: check-evidence pr-summary test-html
check-evidence:
	$(GO) run ./scripts/checkevidence -dir $(DIR) $(if $(IN),-run $(IN)) $(if $(JUNIT_FILE),-junit $(JUNIT_FILE)) $(if $(SUMS),-sums $(SUMS)) \
		$(if $(PUBKEY),-pubkey $(PUBKEY)) $(if $(STRICT),-strict)
pr-summary: tables
	$(GO) run ./scripts/prsummary -dir $(DIR) $(if $(TRTMC),-trtmc $(TRTMC)) -tables $(TABLES)
test-html: browser   # index.html in headless Chromium against its goldens (part of make test)
	$(GO) test -run TestIndexInChromium -count=1 -v ./internal/prsummary/
