package evidencecheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg" // a fixture may be a JPEG
	"math"
	"path"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"qualkit/families/qwen_image/latents"
	"qualkit/internal/judge"
	"qualkit/internal/schema"
	"qualkit/internal/wire"
)

// rowChecks fill in nothing another reads, so their order is only the report's
// (TestRowChecksRunInAnyOrder).
var rowChecks = []func(*rowCheck){
	(*rowCheck).checkRules,
	(*rowCheck).checkHeader,
	(*rowCheck).checkPreflight,
	(*rowCheck).checkStages,
	(*rowCheck).checkFixtures,
	(*rowCheck).checkBuild,
	(*rowCheck).checkCorrectness,
	(*rowCheck).checkCorrectnessCase,
	(*rowCheck).checkProvenance,
	(*rowCheck).checkServerIdentity,
	(*rowCheck).checkServe,
	(*rowCheck).checkCommands,
	(*rowCheck).checkBenchmark,
	(*rowCheck).checkAIPerfRun,
	(*rowCheck).checkLatencyPercentiles,
	(*rowCheck).checkAIPerfLogs,
	(*rowCheck).checkAIPerfInputs,
	(*rowCheck).checkTiming,
	(*rowCheck).checkResultV2,
	(*rowCheck).checkRecords,
	(*rowCheck).checkTaskTimeSource,
	(*rowCheck).checkTaskTimeSources,
	(*rowCheck).checkRecordHashes,
	(*rowCheck).checkServerRecords,
	(*rowCheck).checkServerLog,
	(*rowCheck).checkPhysicalTiming,
	(*rowCheck).checkLatencies,
	(*rowCheck).checkQuality,
	(*rowCheck).checkQualityFile,
	(*rowCheck).checkNativeLogs,
	(*rowCheck).checkNativeBatchLog,
	(*rowCheck).checkNativeCrash,
	(*rowCheck).checkTimeBudget,
	(*rowCheck).checkIdentity,
	(*rowCheck).checkInfluence,
	(*rowCheck).checkControls,
	(*rowCheck).checkQualification,
	(*rowCheck).checkMarkdown,
	(*rowCheck).checkPictures,
}

func (r *rowCheck) check() {
	if r.res == nil {
		return // missing or unreadable: already reported
	}
	for _, c := range rowChecks {
		c(r)
	}
}

func (r *rowCheck) checkHeader() {
	res := r.res
	got := res.Schema
	r.truth(got == schema.ResultSchema || got == schema.ResultSchemaV3 || got == schema.ResultSchemaV2 || got == schema.ResultSchemaV1, schema.ResultsFile, "schema",
		schema.ResultSchema+" (or "+schema.ResultSchemaV3+", "+schema.ResultSchemaV2+" or "+schema.ResultSchemaV1+", written before it)", quote(got))
	r.same(schema.ResultsFile, "row", r.name, res.Row, "the row folder's name")
	r.same(schema.ResultsFile, "checkpoint.name", r.name, res.Checkpoint.Name, "the row folder's name")
	if r.c.info != nil {
		r.same(schema.ResultsFile, "run_id", r.c.info.RunID, res.RunID, schema.RunFile)
	}
}

// checkStages requires the pipeline's stages in order, each pass, fail or not-run,
// and a status that follows from them.
func (r *rowCheck) checkStages() {
	res := r.res
	var names []string
	firstFail := ""
	for _, s := range res.Stages {
		names = append(names, s.Name)
		switch s.Status {
		case schema.Pass, schema.NotRun:
		case schema.Fail:
			if firstFail == "" {
				firstFail = s.Name
			}
		default:
			r.fail(schema.ResultsFile, "stage "+s.Name+" status", "pass, fail or not-run", quote(s.Status))
		}
	}
	if res.Status != schema.StatusNotRun || len(names) > 1 {
		r.same(schema.ResultsFile, "stages", strings.Join(schema.PipelineOf(res.Schema), " "), strings.Join(names, " "), "the pipeline, in order")
	}
	if info := r.c.info; info != nil && info.CorrectnessOnly {
		r.truth(!schema.Passing(res.Status), schema.ResultsFile, "status "+res.Status,
			"correctness-verified, failed or not-run (run.json correctness_only: the later stages never ran)", res.Status)
	}
	switch res.Status {
	case schema.StatusCorrectnessOnly:
		r.checkCorrectnessOnly()
	case schema.StatusQualified, schema.StatusSmoke, schema.StatusPassedNQ, schema.StatusDirty, schema.StatusDouble:
		var notPassed []string
		for _, s := range res.Stages {
			if s.Status != schema.Pass {
				notPassed = append(notPassed, s.Name+"="+s.Status)
			}
		}
		r.truth(len(notPassed) == 0, schema.ResultsFile, "status "+res.Status,
			"every stage pass (a "+res.Status+" row passed all of them)", "stages "+strings.Join(notPassed, ", "))
	case schema.StatusFailed:
		r.truth(firstFail != "", schema.ResultsFile, "status failed", "at least one stage fail", "no stage failed")
		if firstFail != "" {
			r.checkFailureKind(firstFail)
		}
	case schema.StatusNotRun:
		r.truth(res.Reason != "", schema.ResultsFile, "status not-run", "a reason", "none")
		if r.c.info != nil {
			listed := false
			for _, s := range r.c.info.Skips {
				listed = listed || strings.HasPrefix(s, r.name+": ")
			}
			r.truth(listed, schema.ResultsFile, "status not-run", "the row in run.json skips", "not listed there")
			r.truth(!r.c.info.Qualification, schema.ResultsFile, "status not-run",
				"a skip only in a run started with -qualkit.not-qualification", "qualification_run true in run.json")
		}
	default:
		r.fail(schema.ResultsFile, "status", "qualified, smoke-passed, passed-not-qualification, passed-dirty-tree, passed-contract-double, correctness-verified, failed or not-run", quote(res.Status))
	}
}

// checkCorrectnessOnly: a correctness-verified row ran in a correctness-only run,
// passed preflight, build and its case, and ran no later stage.
func (r *rowCheck) checkCorrectnessOnly() {
	const claim = "status " + schema.StatusCorrectnessOnly
	info := r.c.info
	r.truth(info != nil && info.CorrectnessOnly, schema.ResultsFile, claim, "a correctness-only run (run.json correctness_only true)", "not one")
	var wrong []string
	for _, s := range r.res.Stages {
		want := schema.NotRun
		if slices.Contains(schema.CorrectnessOnlyStages, s.Name) {
			want = schema.Pass
		}
		if s.Status != want {
			wrong = append(wrong, s.Name+"="+s.Status)
		}
	}
	r.truth(len(wrong) == 0, schema.ResultsFile, claim, "preflight, build and correctness pass, every later stage not-run", strings.Join(wrong, ", "))
	r.checkCasePassed(claim)
}

// checkCasePassed: the case's JUnit says executed, none skipped, failed or in error.
func (r *rowCheck) checkCasePassed(claim string) {
	if !r.corrOK {
		r.fail(schema.ResultsFile, claim, "a readable correctness/junit.xml", "none")
		return
	}
	cc := r.corr
	r.truth(cc.Skipped == 0 && cc.Failed == 0 && cc.Errors == 0 && cc.Executed > 0, schema.ResultsFile, claim,
		"correctness executed > 0, 0 skipped, 0 failed, 0 errors (correctness/junit.xml)",
		fmt.Sprintf("%d executed, %d skipped, %d failed, %d errors", cc.Executed, cc.Skipped, cc.Failed, cc.Errors))
}

func (r *rowCheck) checkQualification() {
	res := r.res
	if !schema.Passing(res.Status) {
		return
	}
	claim := "status " + res.Status
	r.checkCasePassed(claim)
	if r.rawErr == nil {
		n := r.clientErrors()
		r.truth(n == 0, schema.ResultsFile, claim, "0 failed requests in "+schema.RawExportFile, fmt.Sprint(n))
		m, total := r.identityCounts()
		want := res.Measured + res.Warmup
		r.truth(m == total && total == want, schema.ResultsFile, claim,
			fmt.Sprintf("%d/%d native/HTTP pixel matches (every request, warmup included)", want, want),
			fmt.Sprintf("%d/%d from the PNGs in identity/", m, total))
	} else {
		r.fail(schema.ResultsFile, claim, "a readable "+schema.RawExportFile, "none")
	}
	smoke := res.Checkpoint.Smoke
	double := res.Checkpoint.Double || r.servedByDouble()
	if double {
		r.truth(res.Status == schema.StatusDouble, schema.ResultsFile, claim,
			schema.StatusDouble+" (checkpoint.contract_double, or the server's identity, records or outputs name a contract double)", res.Status)
	}
	switch res.Status {
	case schema.StatusQualified:
		r.truth(!smoke, schema.ResultsFile, claim, "a full profile (a smoke profile is never qualification)", "checkpoint.smoke true")
		if info := r.c.info; info != nil {
			r.truth(len(info.Skips) == 0, schema.ResultsFile, claim,
				fmt.Sprintf("a run without skips; run.json records %d: %s", len(info.Skips), strings.Join(info.Skips, "; ")), res.Status)
			r.truth(info.Qualification, schema.ResultsFile, claim, "a qualification run (run.json qualification_run)", "qualification_run false")
			r.truth(info.AIPerfVersion == AIPerfVersion, schema.ResultsFile, claim, "AIPerf "+AIPerfVersion, "run.json aiperf_version "+quote(info.AIPerfVersion))
		}
	case schema.StatusSmoke:
		r.truth(smoke, schema.ResultsFile, claim, "checkpoint.smoke true", "false")
	case schema.StatusDouble:
		r.truth(res.Checkpoint.Double, schema.ResultsFile, claim, "checkpoint.contract_double true", "false")
	case schema.StatusPassedNQ:
		if info := r.c.info; info != nil {
			r.truth(len(info.Skips) > 0 || !info.Qualification || smoke, schema.ResultsFile, claim,
				"a run with skips or not a qualification run", "run.json has no skips and is a qualification run: the row would be qualified")
		}
	}
}

func (r *rowCheck) checkFixtures() {
	if r.fx == nil {
		return
	}
	const m = schema.FixturesManifest
	for _, im := range r.fx.Images {
		f := schema.Fixture(im.File)
		b, ok := r.read(f)
		if !ok {
			continue // the layout check says it is missing
		}
		r.same(f, "sha256 (fixtures/manifest.json)", im.SHA256, bytesSHA256(b), "")
		r.same(f, "bytes (fixtures/manifest.json)", fmt.Sprint(im.Bytes), fmt.Sprint(len(b)), "")
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(b)); err == nil {
			r.same(f, "size (fixtures/manifest.json)", fmt.Sprintf("%dx%d", im.Width, im.Height), fmt.Sprintf("%dx%d", cfg.Width, cfg.Height), "")
		} else {
			r.fail(f, "a fixture image", "an image that decodes", err.Error())
		}
	}
	if r.res.Settings != nil {
		want := map[string]string{}
		for k, v := range r.fx.Settings {
			want[k] = wire.JSONText(v)
		}
		r.same(schema.ResultsFile, "settings", settingsText(want), settingsText(r.res.Settings), m+" settings")
	}
}

func (r *rowCheck) checkBuild() {
	if r.res.Bundle == nil {
		return
	}
	if r.bundleSHA != "" || r.exists(schema.BundleFile) {
		r.same(schema.ResultsFile, "bundle.sha256", r.bundleSHA, r.res.Bundle.SHA256, schema.BundleFile)
	}
}

func (r *rowCheck) checkCorrectness() {
	got := r.res.Correctness
	if got == nil {
		return
	}
	if !r.corrOK {
		r.fail(schema.ResultsFile, "correctness", "counts from a readable correctness/junit.xml", "counts without one")
		return
	}
	want := r.corr
	const src = "test cases in correctness/junit.xml"
	r.same(schema.ResultsFile, "correctness.total", fmt.Sprint(want.Total), fmt.Sprint(got.Total), src)
	r.same(schema.ResultsFile, "correctness.executed", fmt.Sprint(want.Executed), fmt.Sprint(got.Executed), src)
	r.same(schema.ResultsFile, "correctness.skipped", fmt.Sprint(want.Skipped), fmt.Sprint(got.Skipped), src)
	r.same(schema.ResultsFile, "correctness.failed", fmt.Sprint(want.Failed), fmt.Sprint(got.Failed), src)
	r.same(schema.ResultsFile, "correctness.errors", fmt.Sprint(want.Errors), fmt.Sprint(got.Errors), src)
	r.checkCaseLog()
}

// pytestSummary is pytest's closing line ("=== 7 failed, 30 passed in 2.21s ===").
var (
	pytestSummary = regexp.MustCompile(`(?m)^=*\s*((?:\d+ [a-z]+(?:, )?)+) in [0-9.]+s\b`)
	pytestCount   = regexp.MustCompile(`(\d+) ([a-z]+)`)
)

// checkCaseLog: pytest's summary in correctness/output.log counts what the JUnit counts.
func (r *rowCheck) checkCaseLog() {
	const f = schema.CorrectnessLog
	b, ok := r.read(f)
	if !ok || !r.passed(schema.StageCorrectness) {
		return
	}
	all := pytestSummary.FindAllSubmatch(b, -1)
	if !r.truth(len(all) > 0, f, "pytest's summary line", "the case's closing counts (stage correctness passed)", "none") {
		return
	}
	n := map[string]int{}
	for _, m := range pytestCount.FindAllSubmatch(all[len(all)-1][1], -1) {
		v, _ := strconv.Atoi(string(m[1]))
		n[strings.TrimSuffix(string(m[2]), "s")] += v // "errors" and "error" alike
	}
	c := r.corr
	passed := c.Total - c.Failed - c.Skipped - c.Errors
	r.same(f, "passed / failed / skipped / errors", fmt.Sprintf("%d / %d / %d / %d", passed, c.Failed, c.Skipped, c.Errors),
		fmt.Sprintf("%d / %d / %d / %d", n["passed"], n["failed"], n["skipped"], n["error"]), "the test cases of correctness/junit.xml")
}

func (r *rowCheck) checkServe() {
	b, ok := r.read(schema.StartupFile)
	if !ok {
		return
	}
	var st struct {
		Runtime string `json:"runtime"`
		Spec    struct {
			Bundle, Model string
		} `json:"spec"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		r.fail(schema.StartupFile, "valid JSON", "the server's startup record", err.Error())
		return
	}
	r.same(schema.ResultsFile, "runtime", st.Runtime, r.res.Runtime, schema.StartupFile)
	// The served bundle is compared by file name: the folder differs from host to host.
	r.same(schema.StartupFile, "spec.Model", r.res.Checkpoint.Model, st.Spec.Model, "results.json checkpoint.model")
	if b := r.res.Bundle; b != nil && b.Path != "" {
		r.same(schema.StartupFile, "spec.Bundle", path.Base(b.Path), path.Base(st.Spec.Bundle), "results.json bundle.path")
	}
}

// checkCommands: the AIPerf command asks for the row's counts and settings, and in a
// passing row every command but the (stopped) server exited 0.
func (r *rowCheck) checkCommands() {
	const f = schema.CommandsFile
	if r.cmdsErr != nil {
		r.fail(f, "readable command log", "JSON lines", r.cmdsErr.Error())
		return
	}
	if !r.exists(f) {
		return
	}
	recs, aiperf := r.cmds, r.aiperfCmd
	for _, c := range recs {
		if schema.Passing(r.res.Status) && c.Stage != schema.StageServe {
			r.truth(c.ExitCode == 0, f, "exit code of "+c.Stage+" command "+baseName(firstArg(c.Args)),
				"0 (the row claims "+r.res.Status+")", fmt.Sprint(c.ExitCode))
		}
	}
	r.checkWindows(recs, aiperf)
	if aiperf == nil {
		if r.passed(schema.StageBenchmark) {
			r.fail(f, "AIPerf command", "an `aiperf profile` command (stage benchmark passed)", "none")
		}
		return
	}
	flags := map[string][]string{}
	for i := 2; i < len(aiperf.Args); i++ {
		if a := aiperf.Args[i]; strings.HasPrefix(a, "--") && i+1 < len(aiperf.Args) && !strings.HasPrefix(aiperf.Args[i+1], "--") {
			flags[a] = append(flags[a], aiperf.Args[i+1])
			i++
		}
	}
	one := func(flag string) string { return strings.Join(flags[flag], ",") }
	r.same(schema.ResultsFile, "measured", one("--request-count"), fmt.Sprint(r.res.Measured), f+" aiperf --request-count")
	r.same(schema.ResultsFile, "warmup", one("--warmup-request-count"), fmt.Sprint(r.res.Warmup), f+" aiperf --warmup-request-count")
	r.same(f, "aiperf --concurrency", "1", one("--concurrency"), "the workload")
	r.same(f, "aiperf --model", r.res.Checkpoint.Model, one("--model"), "results.json checkpoint.model")
	r.same(f, "aiperf --export-level", "raw", one("--export-level"), "identity replays the raw export")
	want := map[string][]string{}
	for i, e := 0, r.proto.AIPerfEndpoint(""); i+1 < len(e); i += 2 {
		want[e[i]] = append(want[e[i]], e[i+1])
	}
	for _, flag := range []string{"--endpoint-type", "--custom-endpoint", "--custom-dataset-type"} {
		r.same(f, "aiperf "+flag, strings.Join(want[flag], ","), one(flag), "the "+r.proto.Name()+" protocol")
	}
	if r.proto.Traits().SettingsInPayload {
		// The settings travel in each payload (checked per request), none as extra inputs.
		r.same(f, "aiperf --extra-inputs", "", strings.Join(flags["--extra-inputs"], " "), "the "+r.proto.Name()+" protocol (every setting in the payload)")
		return
	}
	if r.res.Settings != nil {
		got, err := extraInputs(flags["--extra-inputs"])
		if err != nil {
			r.fail(f, "aiperf --extra-inputs", "key:value pairs or one JSON object", err.Error())
			return
		}
		r.same(f, "aiperf --extra-inputs", settingsText(r.res.Settings), settingsText(got), "results.json settings")
	}
}

// extraInputs reads AIPerf --extra-inputs values: each "key:value", or a JSON object.
func extraInputs(values []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range values {
		if strings.HasPrefix(strings.TrimSpace(v), "{") {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(v), &m); err != nil {
				return nil, fmt.Errorf("%q: %v", v, err)
			}
			for k, x := range m {
				out[k] = wire.JSONText(x)
			}
			continue
		}
		k, x, ok := strings.Cut(v, ":")
		if !ok {
			return nil, fmt.Errorf("%q is not key:value", v)
		}
		out[k] = x
	}
	return out, nil
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

func (r *rowCheck) clientErrors() int {
	n := 0
	for _, q := range r.reqs {
		if q.rec.Failed() {
			n++
		}
	}
	return n
}

// checkBenchmark re-derives what AIPerf's exports say, and for a passed benchmark the
// content gate on every response.
func (r *rowCheck) checkBenchmark() {
	res := r.res
	if r.rawErr != nil {
		if r.passed(schema.StageBenchmark) {
			r.fail(schema.RawExportFile, "readable", "AIPerf's raw export (stage benchmark passed)", "missing or unreadable")
		}
		r.same(schema.ResultsFile, "client_errors", "(absent)", intText(res.ClientErrors), "no AIPerf raw export to count failed requests in")
		return
	}
	warm, prof := len(r.phase(phaseWarmup)), len(r.phase(phaseProfiling))
	r.same(schema.ResultsFile, "client_errors", fmt.Sprint(r.clientErrors()), intText(res.ClientErrors), "failed records in "+schema.RawExportFile)
	if r.passed(schema.StageBenchmark) {
		r.same(schema.ResultsFile, "measured", fmt.Sprint(prof), fmt.Sprint(res.Measured), "profiling records in "+schema.RawExportFile)
		r.same(schema.ResultsFile, "warmup", fmt.Sprint(warm), fmt.Sprint(res.Warmup), "warmup records in "+schema.RawExportFile)
		r.truth(warm+prof == len(r.reqs), schema.RawExportFile, "benchmark phases", "every record warmup or profiling",
			fmt.Sprintf("%d records of other phases", len(r.reqs)-warm-prof))
	}
	r.checkProfileExport()
	r.checkSummary(warm, prof)

	pairs := map[string]bool{}
	fixtureSHA := map[string]string{}
	if r.fx != nil {
		for _, im := range r.fx.Images {
			fixtureSHA[im.File] = im.SHA256
		}
		for _, p := range r.fx.Pairs {
			pairs[fixtureSHA[p.Image]+"\x00"+p.Instruction] = true
		}
	}
	size := res.Settings["size"]
	for _, q := range r.reqs {
		where := fmt.Sprintf("request %s (%s)", q.id, q.stem)
		if q.sentErr != nil {
			r.fail(schema.RawExportFile, where+" reference image", "the exact image bytes in the payload", q.sentErr.Error())
			continue
		}
		if r.fx != nil {
			r.truth(pairs[bytesSHA256(q.sent)+"\x00"+q.prompt], schema.RawExportFile, where+" input",
				"an (image, instruction) pair of fixtures/manifest.json", fmt.Sprintf("image sha256 %s with %q", bytesSHA256(q.sent)[:12], q.prompt))
		}
		if res.Settings != nil {
			r.same(schema.RawExportFile, where+" settings", settingsText(res.Settings), settingsText(q.settings), "results.json settings")
		}
		if ua, ok := q.rec.Headers["User-Agent"]; ok {
			r.same(schema.RawExportFile, where+" User-Agent", "aiperf/"+AIPerfVersion, ua, "the pinned AIPerf")
		}
		if q.httpFile != nil && q.resp != nil {
			r.truth(bytes.Equal(q.httpFile, q.resp), q.httpRel(), "the HTTP response's PNG",
				"the image of the response in "+schema.RawExportFile+" (sha256 "+bytesSHA256(q.resp)[:12]+")", "sha256 "+bytesSHA256(q.httpFile)[:12])
		}
		if !r.passed(schema.StageBenchmark) || q.rec.Failed() {
			continue
		}
		if q.respErr != nil {
			r.fail(schema.RawExportFile, where+" response", "a PNG in the response (stage benchmark passed)", q.respErr.Error())
			continue
		}
		out, err := decodePNG(q.resp)
		if err != nil {
			r.fail(schema.RawExportFile, where+" response", "a PNG (stage benchmark passed)", err.Error())
			continue
		}
		r.same(schema.RawExportFile, where+" output size", size, judge.ImageSize(out), "the requested size")
		r.truth(!bytes.Equal(q.resp, q.sent), schema.RawExportFile, where+" output", "not the input image's bytes (stage benchmark passed)", "the input's bytes")
		if r.proto.Traits().ServerKeepsInputs {
			r.checkServerInput(q, where)
		}
	}
	if r.passed(schema.StageBenchmark) && r.proto.Traits().AIPerfInputsFile {
		// AIPerf writes inputs.json for its image_edit dataset, not for raw payloads.
		r.truth(r.exists(schema.DatasetFile), schema.DatasetFile, "exact file set", "required once stage benchmark passed ("+r.proto.Name()+")", "missing")
	}
}

// checkServerInput: the $file input perf-serve kept (<scratch>/<request id>/inputs/
// input-0000<suffix>, files.py @ c94a23d3) is the image AIPerf recorded sending.
func (r *rowCheck) checkServerInput(q *request, where string) {
	dir := schema.Scratch(q.id + "/inputs/")
	var found []string
	for _, f := range r.files {
		if strings.HasPrefix(f, dir) && f != dir+latentsFile {
			found = append(found, f)
		}
	}
	r.checkReplayedNoise(q, where, dir+latentsFile)
	if len(found) != 1 {
		r.fail(schema.Scratch(q.id), where+" server input", "one input file the server kept under "+dir, fmt.Sprintf("%d files", len(found)))
		return
	}
	b, _ := r.read(found[0])
	r.truth(bytes.Equal(b, q.sent), found[0], where+" server input", "the reference image AIPerf sent (sha256 "+bytesSHA256(q.sent)[:12]+", "+schema.RawExportFile+")",
		"sha256 "+bytesSHA256(b)[:12])
}

// latentsFile is a request's replayed noise under its inputs/ (latents.py @ d3e1a549).
const latentsFile = "initial_latents.f32"

// checkReplayedNoise: a request with latent_seed N has a noise file equal to NumPy's
// default_rng(N).standard_normal as float32, whose sha256 its records line states
// (observation.initial_latents_sha256, latent_replay true); one without has none.
func (r *rowCheck) checkReplayedNoise(q *request, where, file string) {
	b, kept := r.read(file)
	if q.latentSeed == nil {
		r.truth(!r.exists(file), file, where+" replayed noise", "none: the request carried no latent_seed", "a noise file")
		return
	}
	if !kept || len(b) == 0 || len(b)%4 != 0 {
		r.fail(file, where+" replayed noise", fmt.Sprintf("the raw float32 noise the server replayed for latent_seed %d", *q.latentSeed), "missing or not float32")
		return
	}
	want, err := latents.Raw(uint64(*q.latentSeed), len(b)/4)
	r.truth(err == nil && bytes.Equal(b, want), file, where+" replayed noise",
		fmt.Sprintf("NumPy's default_rng(%d).standard_normal(%d, float32), the noise perf-serve replays for the request's latent_seed", *q.latentSeed, len(b)/4), "other bytes")
	for _, rec := range r.records {
		if rec.RequestID == q.id {
			r.truth(rec.Observation.LatentReplay != nil && *rec.Observation.LatentReplay, schema.RecordsFile, "request "+q.id+" observation.latent_replay", "true (the request carried latent_seed)", fmt.Sprint(rec.Observation.LatentReplay))
			r.same(schema.RecordsFile, "request "+q.id+" observation.initial_latents_sha256", bytesSHA256(b), rec.Observation.InitialLatents, "the noise file the server kept ("+file+")")
		}
	}
}

func (r *rowCheck) checkProfileExport() {
	if !r.profOK {
		return
	}
	key := func(m schema.RecordMeta) string {
		return fmt.Sprintf("%s %s %d..%d", m.XRequestID, m.BenchmarkPhase, m.RequestStartNs, m.RequestEndNs)
	}
	var want, got []string
	for _, q := range r.reqs {
		want = append(want, key(q.rec.Metadata))
	}
	for _, p := range r.prof {
		got = append(got, key(p.Metadata))
	}
	sort.Strings(want)
	sort.Strings(got)
	r.truth(reflect.DeepEqual(want, got), schema.ProfileExportFile, "requests",
		fmt.Sprintf("the %d requests of %s (id, phase, start, end)", len(want), schema.RawExportFile), fmt.Sprintf("%d requests that differ", len(got)))
}

func (r *rowCheck) checkSummary(warm, prof int) {
	lat, _, _ := r.measuredTimes() // the measured requests' client latencies
	sort.Float64s(lat)
	r.checkTextExports(lat)
	if err := r.aiperf.summaryErr[schema.SummaryExportFile]; err != nil {
		// A failed benchmark's files may be torn (AIPerf killed, disk full): derive nothing.
		if r.passed(schema.StageBenchmark) {
			r.fail(schema.SummaryExportFile, "valid JSON", "AIPerf's summary", err.Error())
		}
	} else if s, ok := r.aiperf.summaries[schema.SummaryExportFile]; ok {
		r.same(schema.SummaryExportFile, "aiperf_version", AIPerfVersion, s.AIPerfVersion, "the pin")
		if info := r.c.info; info != nil {
			r.c.same(schema.RunFile, "aiperf_version", s.AIPerfVersion, info.AIPerfVersion, r.name+"/"+schema.SummaryExportFile)
		}
		if l := s.RequestLatency; l != nil && l.Count != nil {
			r.same(schema.SummaryExportFile, "request_latency.count", fmt.Sprint(len(lat)), fmt.Sprint(*l.Count), "profiling records of "+schema.ProfileExportFile)
		}
		if l := s.RequestLatency; l != nil && len(lat) > 0 && l.Min != nil && l.Max != nil {
			r.truth(nearlyEqual(lat[0], *l.Min) && nearlyEqual(lat[len(lat)-1], *l.Max), schema.SummaryExportFile,
				"request_latency min / max", fmtMs(lat[0])+" / "+fmtMs(lat[len(lat)-1])+" ("+schema.ProfileExportFile+")",
				fmtMs(*l.Min)+" / "+fmtMs(*l.Max))
		}
		if r.passed(schema.StageBenchmark) {
			r.truth(!s.WasCancelled, schema.SummaryExportFile, "was_cancelled", "false (stage benchmark passed)", "true: AIPerf says its benchmark was cancelled")
		}
	}
	r.checkPhaseExports()
	if err := r.aiperf.manifestErr; err != nil {
		if r.passed(schema.StageBenchmark) {
			r.fail(schema.PhaseManifestFile, "valid JSON", "AIPerf's phase manifest", err.Error())
		}
		return
	}
	if !r.aiperf.phasesRead {
		return
	}
	counts := map[string]int{}
	errs := 0
	for _, p := range r.aiperf.phases {
		counts[p.Kind] += p.Total
		errs += p.Errors
	}
	r.same(schema.PhaseManifestFile, "warmup total_request_count", fmt.Sprint(warm), fmt.Sprint(counts[phaseWarmup]), "warmup records of "+schema.RawExportFile)
	r.same(schema.PhaseManifestFile, "profiling total_request_count", fmt.Sprint(prof), fmt.Sprint(counts[phaseProfiling]), "profiling records of "+schema.RawExportFile)
	r.same(schema.PhaseManifestFile, "error_request_count", fmt.Sprint(r.clientErrors()), fmt.Sprint(errs), "failed records of "+schema.RawExportFile)
}

// checkPhaseExports: phases/<phase>/profile_export_aiperf.json states the phase's count
// and latency min / max as the raw export's records of that phase give them.
func (r *rowCheck) checkPhaseExports() {
	if r.rawErr != nil || !r.passed(schema.StageBenchmark) {
		return
	}
	for _, phase := range []string{phaseWarmup, phaseProfiling} {
		lat := r.clientLatencies(phase)
		file := schema.PhaseSummary(phase)
		if err := r.aiperf.summaryErr[file]; err != nil {
			r.fail(file, "valid JSON", "AIPerf's "+phase+" summary", err.Error())
			continue
		}
		s, ok := r.aiperf.summaries[file]
		if !ok {
			continue // the layout check says it is missing
		}
		src := "the " + phase + " records of " + schema.RawExportFile
		l := s.RequestLatency
		if l == nil {
			l = &summaryMetric{}
		}
		if l.Count == nil || *l.Count != len(lat) {
			got := "none"
			if l.Count != nil {
				got = fmt.Sprint(*l.Count)
			}
			r.fail(file, "request_latency.count", fmt.Sprintf("%d (%s)", len(lat), src), got)
			continue
		}
		if len(lat) > 0 && l.Min != nil && l.Max != nil {
			r.truth(nearlyEqual(lat[0], *l.Min) && nearlyEqual(lat[len(lat)-1], *l.Max), file,
				"request_latency min / max", fmtMs(lat[0])+" / "+fmtMs(lat[len(lat)-1])+" ("+src+")",
				fmtMs(*l.Min)+" / "+fmtMs(*l.Max))
		}
	}
}

// nearlyEqual is equality up to float noise, for numbers two programs computed apart.
func nearlyEqual(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

func fmtMs(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + " ms" }

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func (r *rowCheck) checkTiming() {
	res := r.res
	if res.HTTP == nil && res.Task == nil && res.ImagesPerS == 0 && res.Overhead == nil {
		if r.passed(schema.StageBenchmark) {
			r.fail(schema.ResultsFile, "http_latency, task_time", "both columns (stage benchmark passed)", "none")
		}
		return
	}
	if r.rawErr != nil {
		r.fail(schema.ResultsFile, "timing", "a readable "+schema.RawExportFile+" to derive it from", "timing claims without one")
		return
	}
	client, task, problems := r.measuredTimes()
	if len(problems) > 0 {
		r.fail(schema.ResultsFile, "http_latency, task_time", "no value for every measured request: "+strings.Join(problems, "; "), "values")
		return
	}
	q := func(name string, got *schema.Quantiles, xs []float64, src string) {
		if got == nil {
			r.fail(schema.ResultsFile, name, "both timing columns", "none")
			return
		}
		src = schema.PercentileMethod + " over " + src
		r.same(schema.ResultsFile, name+".p50_ms", fmtNum(nearestRank(xs, 50)), fmtNum(got.P50), src)
		r.same(schema.ResultsFile, name+".p95_ms", fmtNum(nearestRank(xs, 95)), fmtNum(got.P95), src)
		r.same(schema.ResultsFile, name+".count", fmt.Sprint(len(xs)), fmt.Sprint(got.Count), "profiling records")
		r.same(schema.ResultsFile, name+".method", schema.PercentileMethod, got.Method, "")
	}
	q("http_latency", res.HTTP, client, "request_latency of the profiling records in "+schema.ProfileExportFile)
	q("task_time", res.Task, task, r.taskSrc)
	ips := r.imagesPerSecond()
	r.truth(nearlyEqual(ips, res.ImagesPerS), schema.ResultsFile, "images_per_s",
		fmtNum(ips)+" (profiling records / (last request_end_ns - first request_start_ns) in "+schema.RawExportFile+")", fmtNum(res.ImagesPerS))
	if res.Overhead != nil && len(client) > 0 {
		d := nearestRank(client, 50) - nearestRank(task, 50)
		r.truth(nearlyEqual(d, res.Overhead.P50DiffMs), schema.ResultsFile, "http_overhead.client_p50_minus_task_p50_ms", fmtNum(d)+" (the two p50s)", fmtNum(res.Overhead.P50DiffMs))
		f := d / nearestRank(client, 50)
		r.truth(nearlyEqual(f, res.Overhead.Fraction), schema.ResultsFile, "http_overhead.fraction_of_client_p50", fmtNum(f), fmtNum(res.Overhead.Fraction))
	}
}

// identityCounts returns (pixel matches, requests).
func (r *rowCheck) identityCounts() (int, int) {
	m := 0
	for _, q := range r.reqs {
		if q.diff != nil && q.diff.Identical() {
			m++
		}
	}
	return m, len(r.reqs)
}

func (r *rowCheck) loadDiffs() {
	if r.res == nil || r.res.Identity == nil {
		return
	}
	for _, q := range r.reqs {
		if q.httpFile == nil || q.native == nil {
			continue
		}
		a, err1 := judge.DecodePNG(q.httpFile)
		b, err2 := judge.DecodePNG(q.native)
		if err1 == nil && err2 == nil {
			d := judge.ComparePixels(a, b)
			q.diff = &d
		}
	}
}

func (r *rowCheck) checkIdentity() {
	if r.res.Identity == nil && !r.exists(schema.IdentityFile) {
		if r.passed(schema.StageIdentity) {
			r.fail(schema.ResultsFile, "identity", "a native/HTTP schema.PixelDiff (stage identity passed)", "none")
		}
		return
	}
	if r.rawErr != nil {
		r.fail(schema.ResultsFile, "identity", "a readable "+schema.RawExportFile+" naming the requests", "identity claims without one")
		return
	}
	var fromFile *schema.IdentitySummary
	if b, ok := r.read(schema.IdentityFile); ok {
		var s schema.IdentitySummary
		if err := json.Unmarshal(b, &s); err != nil {
			r.fail(schema.IdentityFile, "valid JSON", "the identity summary", err.Error())
		} else {
			fromFile = &s
		}
	}
	for _, c := range []struct {
		file string
		s    *schema.IdentitySummary
	}{{schema.ResultsFile, r.res.Identity}, {schema.IdentityFile, fromFile}} {
		if c.s != nil {
			r.checkIdentitySummary(c.file, c.s)
		}
	}
	if r.passed(schema.StageIdentity) {
		m, total := r.identityCounts()
		want := r.res.Measured + r.res.Warmup
		r.truth(m == total && total == want, "identity", "stage identity passed",
			fmt.Sprintf("%d/%d pixel-identical pairs", want, want), fmt.Sprintf("%d/%d", m, total))
	}
}

func (r *rowCheck) checkIdentitySummary(file string, s *schema.IdentitySummary) {
	m, total := r.identityCounts()
	bytesSame := 0
	for _, q := range r.reqs {
		if q.httpFile != nil && q.native != nil && bytes.Equal(q.httpFile, q.native) {
			bytesSame++
		}
	}
	const src = "decoded PNG pairs in identity/"
	r.same(file, "identity.total", fmt.Sprint(total), fmt.Sprint(s.Total), "records in "+schema.RawExportFile)
	r.same(file, "identity.pixel_matches", fmt.Sprint(m), fmt.Sprint(s.PixelMatches), src)
	r.same(file, "identity.byte_identical", fmt.Sprint(bytesSame), fmt.Sprint(s.ByteIdentical), "byte-equal PNG pairs in identity/")
	if len(s.Requests) != len(r.reqs) {
		r.same(file, "identity.requests", fmt.Sprint(len(r.reqs)), fmt.Sprint(len(s.Requests)), "records in "+schema.RawExportFile)
		return
	}
	for i, got := range s.Requests {
		q := r.reqs[i]
		at := fmt.Sprintf("identity.requests[%d].", i)
		r.same(file, at+"request_id", q.id, got.RequestID, schema.RawExportFile)
		r.same(file, at+"phase", q.phase, got.Phase, schema.RawExportFile)
		r.same(file, at+"prompt", q.prompt, got.Prompt, schema.RawExportFile)
		if got.InputSHA256 != "" && q.sentErr == nil {
			r.same(file, at+"input_sha256", bytesSHA256(q.sent), got.InputSHA256, "the payload image in "+schema.RawExportFile)
		}
		if got.HTTPFile != "" {
			r.same(file, at+"http_file", q.httpRel(), got.HTTPFile, "")
		}
		if got.NativeFile != "" {
			r.same(file, at+"native_file", q.nativeRel(), got.NativeFile, "")
		}
		if got.HTTPSHA256 != "" {
			r.same(file, at+"http_sha256", shaOrNone(q.httpFile), got.HTTPSHA256, q.httpRel())
		}
		if got.NativeSHA256 != "" {
			r.same(file, at+"native_sha256", shaOrNone(q.native), got.NativeSHA256, q.nativeRel())
		}
		if d := q.diff; d != nil {
			r.truth(d.Identical() == (got.Pixels == "pixel-identical"), file, at+"pixels", d.String()+" ("+q.httpRel()+" vs "+q.nativeRel()+")", quote(got.Pixels))
		} else if got.Pixels == "pixel-identical" {
			r.fail(file, at+"pixels", "no decodable pair to compare", quote(got.Pixels))
		}
		if q.phase == phaseProfiling && got.ClientMs != 0 {
			r.truth(q.client && nearlyEqual(q.clientMs, got.ClientMs), file, at+"client_latency_ms", fmtNum(q.clientMs)+" ("+schema.ProfileExportFile+")", fmtNum(got.ClientMs))
		}
		if got.TaskMs != 0 {
			v, ok := r.tasks[q.id]
			r.truth(ok && nearlyEqual(v, got.TaskMs), file, at+"task_ms", fmtNum(v)+" ("+r.taskSrc+")", fmtNum(got.TaskMs))
		}
	}
}

func shaOrNone(b []byte) string {
	if b == nil {
		return "no file"
	}
	return bytesSHA256(b)
}

// checkInfluence: the same request twice matches, another reference image changes the output.
func (r *rowCheck) checkInfluence() {
	var imgs []*imageFile
	var full []image.Image
	var pngs []string
	for _, name := range schema.InfluenceProbes {
		pngs = append(pngs, schema.InfluencePNG(name))
	}
	for _, f := range pngs {
		b, ok := r.read(f)
		if !ok {
			return
		}
		img, err := judge.DecodePNG(b)
		if err != nil {
			r.fail(f, "an influence output", "a PNG", err.Error())
			return
		}
		imgs = append(imgs, &imageFile{f, judge.ToNRGBA(img)})
		full = append(full, img)
	}
	repeat, other := judge.ComparePixels(full[0], full[1]), judge.ComparePixels(full[0], full[2])
	if r.passed(schema.StageInfluence) {
		r.truth(repeat.Identical(), pngs[1], "stage influence passed", "pixel-identical to "+pngs[0], repeat.String())
		n := imgs[0].img.Rect.Dx() * imgs[0].img.Rect.Dy()
		frac := float64(other.DifferingPixel) / float64(max(n, 1))
		r.truth(other.SameSize && frac >= judge.MinInfluenceFraction && other.MeanAbs >= judge.MinInfluenceMeanLevels, pngs[2], "stage influence passed",
			fmt.Sprintf("at least %.0f %% of the pixels and a mean of %.2f levels different from %s (the reference image matters)", 100*judge.MinInfluenceFraction, judge.MinInfluenceMeanLevels, pngs[0]),
			fmt.Sprintf("%.2f %% of the pixels, mean %.4f levels", 100*frac, other.MeanAbs))
	}
	check := func(file string, got *schema.InfluenceResult) {
		for _, c := range []struct {
			name string
			want schema.PixelDiff
			got  schema.PixelDiff
		}{{"repeat", repeat, got.Repeat}, {"other", other, got.Other}} {
			src := pngs[0] + " vs " + map[string]string{"repeat": pngs[1], "other": pngs[2]}[c.name]
			r.same(file, "influence."+c.name+".same_size", fmt.Sprint(c.want.SameSize), fmt.Sprint(c.got.SameSize), src)
			r.same(file, "influence."+c.name+".differing_pixels", fmt.Sprint(c.want.DifferingPixel), fmt.Sprint(c.got.DifferingPixel), src)
			r.same(file, "influence."+c.name+".max_abs_diff", fmt.Sprint(c.want.MaxAbs), fmt.Sprint(c.got.MaxAbs), src)
			r.truth(nearlyEqual(c.want.MeanAbs, c.got.MeanAbs), file, "influence."+c.name+".mean_abs_diff", fmtNum(c.want.MeanAbs)+" ("+src+")", fmtNum(c.got.MeanAbs))
		}
		if r.fx != nil {
			r.same(file, "influence.instruction", r.fx.Influence.Instruction, got.Instruction, schema.FixturesManifest)
			r.same(file, "influence.images", strings.Join(r.fx.Influence.Images, " "), strings.Join(got.Images[:], " "), schema.FixturesManifest)
		}
	}
	if r.res.Influence != nil {
		check(schema.ResultsFile, r.res.Influence)
	}
	if b, ok := r.read(schema.InfluenceFile); ok {
		var got schema.InfluenceResult
		if err := json.Unmarshal(b, &got); err != nil {
			r.fail(schema.InfluenceFile, "influence", "the influence result", err.Error())
		} else {
			check(schema.InfluenceFile, &got)
		}
	}
}

type imageFile struct {
	name string
	img  *image.NRGBA
}

// doubleMarker is what qualkit's TRTMC contract double writes into everything it answers
// or produces; a real serving stack never does.
var doubleMarker = regexp.MustCompile(`"qualkit_contract_double"\s*:\s*true`)

// servedByDouble: such a row is passed-contract-double whatever results.json says.
func (r *rowCheck) servedByDouble() bool {
	for _, f := range []string{schema.ServerIdentityFile, schema.RecordsFile} {
		if b, ok := r.read(f); ok && doubleMarker.Match(b) {
			return true
		}
	}
	return false
}

// checkFailureKind: a failed row's reason is "stage X failed: <kind>: ...", or "stage X
// failed" in evidence written before kinds were recorded.
func (r *rowCheck) checkFailureKind(firstFail string) {
	res := r.res
	var kind string
	for _, s := range res.Stages {
		if s.Kind != "" {
			r.truth(s.Status == schema.Fail, schema.ResultsFile, "stage "+s.Name+" kind", "a kind only on a failed stage", s.Status+" with kind "+s.Kind)
			r.truth(slices.Contains(schema.FailureKinds, s.Kind), schema.ResultsFile, "stage "+s.Name+" kind", strings.Join(schema.FailureKinds, ", "), s.Kind)
		}
		if s.Name == firstFail {
			kind = s.Kind
		}
	}
	r.same(schema.ResultsFile, "failure_kind", kind, res.FailureKind, "the kind of the first failed stage, "+firstFail)
	if kind == "" {
		r.same(schema.ResultsFile, "reason", "stage "+firstFail+" failed", res.Reason, "the first failed stage")
		return
	}
	prefix := "stage " + firstFail + " failed: " + kind + ": "
	r.truth(strings.HasPrefix(res.Reason, prefix), schema.ResultsFile, "reason", quote(prefix+"...")+" (the first failed stage and its kind)", quote(res.Reason))
}

var (
	csvLatency = regexp.MustCompile(`(?m)^Request Latency \(ms\),([0-9.]+),([0-9.]+),([0-9.]+),`)
	csvCount   = regexp.MustCompile(`(?m)^Request Count,([0-9.]+)`)
	// The console writes each value as f"{value:,.2f}" (aiperf/exporters/
	// console_metrics_exporter.py § _format_row, AIPerf 0.13.0): 1,392.90 past a second.
	consoleLatency = regexp.MustCompile(`Request Latency \(ms\) │ +(` + consoleNumber + `) │ +(` + consoleNumber + `) │ +(` + consoleNumber + `) │`)
)

// checkTextExports: the CSV and console state count and latency avg / min / max of lat
// (the measured latencies, sorted) to two decimals.
func (r *rowCheck) checkTextExports(lat []float64) {
	if len(lat) == 0 {
		return
	}
	sum := 0.0
	for _, v := range lat {
		sum += v
	}
	want := fmt.Sprintf("%.2f / %.2f / %.2f", sum/float64(len(lat)), lat[0], lat[len(lat)-1])
	src := "avg / min / max of the measured request_latency values in " + schema.ProfileExportFile
	for _, f := range []struct {
		file string
		re   *regexp.Regexp
	}{{schema.CSVExportFile, csvLatency}, {schema.ConsoleExportFile, consoleLatency}} {
		b, ok := r.read(f.file)
		if !ok {
			continue // the layout check says it is missing
		}
		m := f.re.FindSubmatch(b)
		if m == nil {
			r.fail(f.file, "Request Latency (ms)", "a Request Latency (ms) line ("+src+")", "none")
			continue
		}
		got := strings.ReplaceAll(fmt.Sprintf("%s / %s / %s", m[1], m[2], m[3]), ",", "")
		r.truth(sameAt2(want, got), f.file, "Request Latency (ms) avg / min / max", want+" ms ("+src+")", got)
	}
	if b, ok := r.read(schema.CSVExportFile); ok {
		if m := csvCount.FindSubmatch(b); m != nil {
			r.same(schema.CSVExportFile, "Request Count", fmt.Sprintf("%.2f", float64(len(lat))), string(m[1]), "measured records of "+schema.ProfileExportFile)
		}
	}
}

// sameAt2 compares "a / b / c" triples of two-decimal numbers, one unit of the last
// place apart at most (AIPerf rounds what it sums in another order).
func sameAt2(want, got string) bool {
	w, g := strings.Split(want, " / "), strings.Split(got, " / ")
	if len(w) != len(g) {
		return false
	}
	for i := range w {
		a, err1 := strconv.ParseFloat(w[i], 64)
		b, err2 := strconv.ParseFloat(g[i], 64)
		if err1 != nil || err2 != nil || math.Abs(a-b) > 0.0101 {
			return false
		}
	}
	return true
}
