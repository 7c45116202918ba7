package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	qwenimage "qualkit/families/qwen_image"
)

// workflow is the part of docs/ci/qualkit-matrix.yml these tests read.
type workflow struct {
	Permissions map[string]string `yaml:"permissions"`
	Env         map[string]string `yaml:"env"`
	Jobs        map[string]struct {
		Steps []step `yaml:"steps"`
	} `yaml:"jobs"`
}

type step struct {
	If   string            `yaml:"if"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	With map[string]string `yaml:"with"`
	Env  map[string]string `yaml:"env"`
}

func readWorkflow(t *testing.T, path string) workflow {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var w workflow
	require.NoError(t, yaml.Unmarshal(b, &w))
	return w
}

const workflowFile = "../../docs/ci/qualkit-matrix.yml"

// stepsUsing returns the job's steps whose `uses` starts with action.
func stepsUsing(steps []step, action string) []step {
	var out []step
	for _, s := range steps {
		if strings.HasPrefix(s.Uses, action+"@") {
			out = append(out, s)
		}
	}
	return out
}

// checkWorkflow says what the sample workflow lacks of what its jobs need; empty when
// nothing. It is a function so that each check is shown to fail on a workflow without it.
func checkWorkflow(w workflow, setupFiles []string) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	want := map[string]string{"contents": "read", "checks": "write"}
	if !maps(w.Permissions, want) {
		bad("permissions are %v, want exactly %v (action-junit-report writes a check run)", w.Permissions, want)
	}

	row := w.Jobs["row"].Steps
	const qwen = "matrix.test == 'TestQwenImageEdit'"
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(w.Env["TRTMC_COMMIT"]) {
		bad("env TRTMC_COMMIT %q is not a full commit id: the TRTMC checkout must be pinned", w.Env["TRTMC_COMMIT"])
	}
	if w.Env["QWEN_MODEL"] != qwenimage.HFID || w.Env["QWEN_REVISION"] != qwenimage.Revision {
		bad("env QWEN_MODEL %q at QWEN_REVISION %q, the row qualifies %s at %s", w.Env["QWEN_MODEL"], w.Env["QWEN_REVISION"], qwenimage.HFID, qwenimage.Revision)
	}
	trtmc := slices.ContainsFunc(stepsUsing(row, "actions/checkout"), func(s step) bool {
		return s.If == qwen && s.With["repository"] == "${{ env.TRTMC_REPOSITORY }}" && s.With["ref"] == "${{ env.TRTMC_COMMIT }}" &&
			strings.HasPrefix(s.With["path"], ".cache/") // ignored by git: the qualkit tree stays clean
	})
	if !trtmc {
		bad("the row job has no TRTMC checkout at env.TRTMC_COMMIT into .cache/ for the Qwen row (if: %s)", qwen)
	}
	hf := slices.ContainsFunc(row, func(s step) bool {
		return s.If == qwen && s.Env["HF_HOME"] != "" &&
			strings.Contains(s.Run, `hf download "$QWEN_MODEL" --revision "$QWEN_REVISION"`) &&
			strings.Contains(s.Run, "QUALKIT_HF_CACHE=$HF_HOME") && strings.Contains(s.Run, "QUALKIT_TRTMC_DIR=")
	})
	if !hf {
		bad("the row job has no step putting the Qwen checkpoint in an HF cache and exporting QUALKIT_HF_CACHE and QUALKIT_TRTMC_DIR (if: %s)", qwen)
	}

	for _, job := range []string{"plan", "row"} {
		venv := slices.ContainsFunc(stepsUsing(w.Jobs[job].Steps, "actions/cache"), func(s step) bool {
			if s.With["path"] != "~/.cache/qualkit" || !strings.Contains(s.With["key"], "steps.python.outputs.python-version") {
				return false
			}
			for _, f := range setupFiles {
				if !strings.Contains(s.With["key"], "'"+f+"'") {
					return false
				}
			}
			return true
		})
		if !venv {
			bad("job %s has no venv cache of ~/.cache/qualkit keyed on the Python version and every file setup.sh hashes (%v)", job, setupFiles)
		}
	}
	bundles := slices.ContainsFunc(stepsUsing(row, "actions/cache"), func(s step) bool {
		return strings.Contains(s.With["path"], ".cache/bundles") && strings.Contains(s.With["path"], "evidence") &&
			strings.Contains(s.With["key"], "matrix.name")
	})
	if !bundles {
		bad("the row job has no cache of .cache/bundles with the evidence that vouches for them, keyed per row")
	}
	if len(stepsUsing(w.Jobs["merge"].Steps, "mikepenz/action-junit-report")) != 1 {
		bad("the merge job does not publish the merged JUnit with action-junit-report")
	}
	return problems
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// setupFiles are the files scripts/setup.sh hashes into the venv's name.
func setupFiles(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../scripts/setup.sh")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^want=\$\(cat (.*?) \|`).FindSubmatch(b)
	require.NotNil(t, m, "setup.sh has no want=$(cat ... | sha256sum) line")
	var files []string
	for _, f := range regexp.MustCompile(`"\$root/([^"]+)"`).FindAllSubmatch(m[1], -1) {
		files = append(files, string(f[1]))
	}
	require.NotEmpty(t, files)
	return files
}

func TestSampleWorkflowHasWhatItsJobsNeed(t *testing.T) {
	assert.Empty(t, checkWorkflow(readWorkflow(t, workflowFile), setupFiles(t)))
	// The Qwen condition names the table's test.
	src, err := os.ReadFile(filepath.Join("..", "..", "qual", "tables_test.go"))
	require.NoError(t, err)
	assert.Contains(t, string(src), "func TestQwenImageEdit(t *testing.T)")
}

// Each check fails on a workflow that lacks its part.
func TestSampleWorkflowChecksCanFail(t *testing.T) {
	files := setupFiles(t)
	for _, tt := range []struct {
		name, old, new, want string
	}{
		{"no checks: write", "  checks: write\n", "", "permissions are"},
		{"a branch, not a commit", "TRTMC_COMMIT: e9132e79fba1bd22e5b121a4f339268e64a6faaf", "TRTMC_COMMIT: main", "not a full commit id"},
		{"another revision", "QWEN_REVISION: " + qwenimage.Revision, "QWEN_REVISION: main", "QWEN_REVISION"},
		{"no TRTMC checkout", "path: .cache/trtmc", "path: trtmc", "no TRTMC checkout"},
		{"no HF cache export", `echo "QUALKIT_HF_CACHE=$HF_HOME" >> "$GITHUB_ENV"`, "", "no step putting the Qwen checkpoint"},
		{"a venv key without a pin file", "'scripts/constraints.txt', ", "", "no venv cache"},
		{"no bundle cache", ".cache/bundles\n", "", "no cache of .cache/bundles"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := os.ReadFile(workflowFile)
			require.NoError(t, err)
			require.Contains(t, string(b), tt.old)
			path := filepath.Join(t.TempDir(), "w.yml")
			require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(string(b), tt.old, tt.new)), 0o644))
			problems := checkWorkflow(readWorkflow(t, path), files)
			require.NotEmpty(t, problems)
			assert.Contains(t, strings.Join(problems, "\n"), tt.want)
		})
	}
}
