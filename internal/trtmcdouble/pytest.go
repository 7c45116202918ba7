package trtmcdouble

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// EnvCase set to "fail" makes the correctness case fail, for negative tests.
const EnvCase = "QUALKIT_DOUBLE_CASE"

// pytest's exit codes.
const (
	pytestFailed     = 1
	pytestUsage      = 4
	pytestNoTestsRan = 5
)

// Node ids of TRTMC's correctness case for the profile, per layout.
const (
	LegacyNodeID   = legacyTestFile + "::test_model_e2e[" + Profile + "]"
	FamiliesNodeID = familiesTestFile + "::test_official_checkpoint_e2e[" + Profile + "]"
)

// pytestCommon are the pytest options the double accepts in both layouts.
var pytestCommon = []opt{
	{"-v", false}, {"-rs", false}, {"-q", false}, {"-x", false},
	{"-p", true}, {"-o", true}, {"--junitxml", true}, {"--basetemp", true},
}

// pytestParsers add each layout's root conftest.py options to pytest's own.
var pytestParsers = map[string]optParser{
	LayoutLegacy: newOptParser(true, append(slices.Clone(pytestCommon),
		opt{"--engine-dir", true}, opt{"--trtmc-binary", true}, opt{"--hf-python", true},
		opt{"--model-plugin-dir", true}, opt{"--rebuild-engines", false},
		opt{"--e2e-model", true}, opt{"--e2e-testcase", true}, opt{"--e2e-artifacts-dir", true})...),
	LayoutFamilies: newOptParser(true, append(slices.Clone(pytestCommon),
		opt{"--e2e-model", true}, opt{"--e2e-testcase", true}, opt{"--e2e-models-file", true})...),
}

const (
	statusPassed  = "passed"
	statusFailed  = "failed"
	statusSkipped = "skipped"
)

// outcome is how the case ended.
type outcome struct {
	status  string
	message string
	file    string   // the test file, for a skip's location
	log     []string // what the case did, for e2e_run.log
}

// manifest is the fields of a TRTMC test manifest the double reads.
type manifest struct {
	Name       string `json:"name"`
	HFID       string `json:"hf_id"`
	HFRevision string `json:"hf_revision"`
	Bundle     string `json:"bundle"`
	Family     string `json:"family"`
	Precision  string `json:"precision"`
	// ImageHeight and ImageWidth are the output size (the families layout states it
	// once for the manifest).
	ImageHeight int `json:"image_height"`
	ImageWidth  int `json:"image_width"`
	BuildArgs   struct {
		MaxCacheLength int `json:"max_cache_length"`
	} `json:"build_args"`
	Testcases []testcase `json:"testcases"`
}

type testcase struct {
	Name              string   `json:"name"`
	Prompt            string   `json:"prompt"`
	TestImage         string   `json:"test_image"`
	NegativePrompt    *string  `json:"negative_prompt"`
	NumInferenceSteps int      `json:"num_inference_steps"`
	CFGScale          *float64 `json:"cfg_scale"`
	Seed              int64    `json:"seed"`
	Height            int      `json:"height"`
	Width             int      `json:"width"`
}

// session is one pytest invocation being played.
type session struct {
	p      *proc
	layout string
	args   parsedArgs
	node   string
	m      manifest
	tc     testcase
	modDir string // the manifest's family directory in the checkout
}

// pytestMain plays `python3 -m pytest NODEID [options]` running TRTMC's correctness case.
func pytestMain(p *proc, args []string) int {
	start := time.Now()
	s, code := newSession(p, args)
	if code != exitOK {
		return code
	}
	if !s.selected() {
		fmt.Fprintf(p.stdout, "%s\ncollected 1 item / 1 deselected / 0 selected\n\n%s\n", sessionHeader(p), summaryLine("1 deselected", start))
		if code := s.junit(nil, start); code != exitOK {
			return code
		}
		return pytestNoTestsRan
	}
	var o outcome
	if s.layout == LayoutLegacy {
		o = s.legacyCase()
	} else {
		o = s.familiesCase()
	}
	fmt.Fprintf(p.stdout, "%s\ncollected 1 item\n\n%s %s\n", sessionHeader(p), s.node, strings.ToUpper(o.status))
	switch o.status {
	case statusFailed:
		fmt.Fprintf(p.stdout, "\nFAILED %s - %s\n", s.node, o.message)
	case statusSkipped:
		fmt.Fprintf(p.stdout, "\nSKIPPED [1] %s: %s\n", o.file, o.message)
	}
	fmt.Fprintln(p.stdout, summaryLine("1 "+o.status, start))
	if code := s.junit(&o, start); code != exitOK {
		return code
	}
	if o.status == statusFailed {
		return pytestFailed
	}
	return exitOK
}

func sessionHeader(p *proc) string {
	return fmt.Sprintf("============================= test session starts ==============================\nplatform linux -- Python %s, pytest-8.4.2 (qualkit contract double: no model runs)\nrootdir: %s", PythonVersion, p.wd)
}

func summaryLine(what string, start time.Time) string {
	return fmt.Sprintf("==================== %s in %.2fs (qualkit contract double) ====================", what, time.Since(start).Seconds())
}

// newSession parses the command line and finds the case, answering pytest's usage errors.
func newSession(p *proc, args []string) (*session, int) {
	layout := layoutOf(p.wd)
	if layout == "" {
		return nil, p.fail(pytestUsage, "ERROR: qualkit contract double: %s is not a TRTMC checkout of either layout (no %s nor %s)", p.wd, legacyModelTOML, familiesManifest)
	}
	a, err := pytestParsers[layout].parse(args)
	var mv *missingValueError
	switch {
	case errors.As(err, &mv):
		return nil, p.pytestUsageError("argument %s: expected one argument", mv.flag)
	case len(a.unknown) > 0:
		return nil, p.pytestUsageError("unrecognized arguments: %s", strings.Join(a.unknown, " "))
	}
	if err := checkPytestOptions(a); err != nil {
		return nil, p.fail(pytestUsage, "ERROR: %v", err)
	}
	if c := p.getenv(EnvCase); c != "" && c != "fail" {
		return nil, p.fail(pytestUsage, "ERROR: %s=%q: the double knows only %s=fail", EnvCase, c, EnvCase)
	}
	s := &session{p: p, layout: layout, args: a}
	testFile, manifestPath := familiesTestFile, familiesManifest
	s.node, s.modDir = FamiliesNodeID, familiesTestsDir
	if layout == LayoutLegacy {
		testFile, manifestPath = legacyTestFile, legacyManifest
		s.node, s.modDir = LegacyNodeID, legacyModelDir
	}
	switch {
	case len(a.pos) != 1:
		return nil, p.fail(pytestUsage, "ERROR: qualkit contract double: give exactly one node id, %s (got %d)", s.node, len(a.pos))
	case a.pos[0] != s.node:
		return nil, p.fail(pytestUsage, "ERROR: not found: %s\n(the qualkit contract double of this checkout plays only %s)", p.wd+"/"+a.pos[0], s.node)
	case !isFile(filepath.Join(p.wd, testFile)):
		return nil, p.fail(pytestUsage, "ERROR: file or directory not found: %s", testFile)
	}
	if err := s.readManifest(manifestPath); err != nil {
		return nil, p.fail(pytestUsage, "ERROR: collecting %s: %v", testFile, err)
	}
	if code := s.prepareBasetemp(); code != exitOK {
		return nil, code
	}
	return s, exitOK
}

func (p *proc) pytestUsageError(format string, a ...any) int {
	return p.fail(pytestUsage, "ERROR: usage: __main__.py [options] [file_or_dir] [file_or_dir] [...]\n__main__.py: error: %s\n  inifile: None\n  rootdir: %s", fmt.Sprintf(format, a...), p.wd)
}

// checkPytestOptions checks the values of -p and -o, the only ones the double restricts.
func checkPytestOptions(a parsedArgs) error {
	for _, v := range a.vals["-p"] {
		if v != "no:cacheprovider" {
			return fmt.Errorf("-p %s: the qualkit contract double accepts only -p no:cacheprovider", v)
		}
	}
	for _, v := range a.vals["-o"] {
		k, val, _ := strings.Cut(v, "=")
		if k != "tmp_path_retention_policy" || !oneOf("all", "failed", "none")(val) {
			return fmt.Errorf("-o %s: the qualkit contract double accepts only -o tmp_path_retention_policy=all|failed|none", v)
		}
	}
	return nil
}

func (s *session) readManifest(rel string) error {
	b, err := os.ReadFile(filepath.Join(s.p.wd, rel))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &s.m); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	for _, tc := range s.m.Testcases {
		if tc.Name == Profile {
			s.tc = tc
			return nil
		}
	}
	return fmt.Errorf("%s has no testcase %s", rel, Profile)
}

// basetemp is pytest's --basetemp, or the default pytest-of-<user>/pytest-0 under TMPDIR.
func (s *session) basetemp() string {
	if bt := s.args.get("--basetemp"); bt != "" {
		return s.p.abs(bt)
	}
	tmp, user := s.p.getenv("TMPDIR"), s.p.getenv("USER")
	if tmp == "" {
		tmp = "/tmp"
	}
	if user == "" {
		user = "root"
	}
	return filepath.Join(tmp, "pytest-of-"+user, "pytest-0")
}

// prepareBasetemp empties --basetemp, as pytest does at the start of a session.
func (s *session) prepareBasetemp() int {
	if !s.args.has("--basetemp") {
		return exitOK
	}
	bt := s.basetemp()
	if filepath.Dir(bt) == bt {
		return s.p.fail(pytestUsage, "ERROR: --basetemp %s: refusing to empty a filesystem root", bt)
	}
	if err := os.RemoveAll(bt); err != nil {
		return s.p.fail(pytestUsage, "ERROR: --basetemp %s: %v", bt, err)
	}
	return exitOK
}

// selected applies the layout's E2E selectors: a case not named by a given selector is
// deselected.
func (s *session) selected() bool {
	names := func(flag string) bool {
		vals := s.args.vals[flag]
		return len(vals) == 0 || slices.Contains(vals, Profile) || slices.Contains(vals, Family) && flag == "--e2e-model"
	}
	if !names("--e2e-model") || !names("--e2e-testcase") {
		return false
	}
	if f := s.args.get("--e2e-models-file"); f != "" {
		b, err := os.ReadFile(s.p.abs(f))
		return err == nil && strings.Contains(string(b), Profile)
	}
	return true
}

func (s *session) hasSelector() bool {
	return s.args.has("--e2e-model") || s.args.has("--e2e-testcase") || s.args.has("--e2e-models-file")
}

func (s *session) junit(o *outcome, start time.Time) int {
	path := s.args.get("--junitxml")
	if path == "" {
		return exitOK
	}
	if err := writeJUnit(s.p.abs(path), s.node, o, time.Since(start)); err != nil {
		return s.p.fail(pytestUsage, "INTERNALERROR> --junitxml %s: %v", path, err)
	}
	return exitOK
}

// settings are the testcase's edit settings on a bundle.
func (s *session) settings(h BundleHeader) Settings {
	st := DefaultSettings(h)
	st.Seed = s.tc.Seed
	if s.tc.NumInferenceSteps > 0 {
		st.Steps = s.tc.NumInferenceSteps
	}
	if s.tc.CFGScale != nil {
		// The case's cfg_scale is the one CFG control: TRTMC's Qwen-Image reads
		// guidance_scale as its true CFG scale, so the case sets both.
		st.CFGScale, st.GuidanceScale = *s.tc.CFGScale, *s.tc.CFGScale
	}
	if s.tc.NegativePrompt != nil {
		st.NegativePrompt = *s.tc.NegativePrompt
	}
	return st
}

func failed(msg string, log []string) outcome {
	return outcome{status: statusFailed, message: msg, log: append(log, "FAILED: "+msg)}
}
