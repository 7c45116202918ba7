package harness

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
	"qualkit/internal/schema"
)

// FakeJudged is the fake family with quality criteria in a file of its own
// (fixtures/fake/quality.json in the test root) and the pair a.png + "invert", whose
// reference image the fake correctness case writes.
type FakeJudged struct {
	FakeFamily
	Prompt string // the pair's instruction; "invert" is one the benchmark sends
}

func (f FakeJudged) Describe(env family.Env, row family.Row) (family.Spec, error) {
	spec, err := f.FakeFamily.Describe(env, row)
	spec.Quality = f.quality
	return spec, err
}

func (f FakeJudged) quality(env family.Env) (family.QualitySpec, error) {
	file := filepath.Join(env.Root, "fixtures", "fake", "quality.json")
	b, err := os.ReadFile(file)
	if err != nil {
		return family.QualitySpec{}, err
	}
	var c schema.QualityCriteria
	if err := json.Unmarshal(b, &c); err != nil {
		return family.QualitySpec{}, err
	}
	return family.QualitySpec{Files: []string{file}, Criteria: c,
		Pair: &family.QualityPair{Image: filepath.Join(env.Root, "fixtures", "fake", "a.png"), Prompt: f.Prompt, Reference: "reference/a-invert.png"}}, nil
}

func (f FakeJudged) Correctness(env family.Env, spec family.CorrectnessSpec) (family.CorrectnessCase, error) {
	cc, err := f.FakeFamily.Correctness(env, spec)
	cc.Command.Env = append(cc.Command.Env, "QUALKIT_FAKE_PAIR="+filepath.Join(env.Root, "fixtures", "fake", "a.png"))
	return cc, err
}

// The quality stage applies the family's criteria, read from its file, to every HTTP
// output and the reference criteria to the pair's; a missed criterion or a pair never
// sent fails it, and no earlier stage.
func TestQualityStage(t *testing.T) {
	for _, tc := range []struct {
		name, criteria, prompt, fault, msg string
	}{
		{"within the criteria", `{"pixel_mean_min": 0.05, "pixel_mean_max": 0.95, "pixel_std_min": 0.01, "psnr_min": 40, "ssim_min": 0.99}`, "invert", "", ""},
		{"a mean bound missed", `{"pixel_mean_max": 0.1}`, "invert", "", "pixel mean"},
		{"the pair's PSNR missed", `{"psnr_min": 1000}`, "invert", "", "psnr 999.00 dB < 1000"},
		{"the pair never sent", `{}`, "not sent", "", "no request sent the pair the correctness case ran"},
		{"a flat output", `{}`, "invert", faultConstant, "output is a constant image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipeline(t, false)
			require.NoError(t, os.WriteFile(filepath.Join(p.root, "fixtures", "fake", "quality.json"), []byte(tc.criteria), 0o644))
			c := p.row("judged", tc.fault)
			c.Adapter = FakeJudged{FakeFamily: FakeFamily{Fault: tc.fault}, Prompt: tc.prompt}
			s := p.start(t)
			res, err := s.Run(context.Background(), c, t.TempDir(), Reproduce(t.Name()))
			st, _ := res.Stage(schema.StageQuality)
			q := res.Quality
			require.NotNil(t, q)
			require.Len(t, q.Files, 1)
			assert.Equal(t, "fixtures/fake/quality.json", q.Files[0].Source)
			assert.FileExists(t, filepath.Join(s.Evidence.Dir, "judged", q.Files[0].File))
			assert.FileExists(t, filepath.Join(s.Evidence.Dir, "judged", schema.QualityFile))
			assert.Len(t, q.Requests, 4, "every output, warmup too")
			bench, _ := res.Stage(schema.StageBenchmark)
			assert.Equal(t, schema.Pass, bench.Status, "no earlier stage fails")
			if tc.msg == "" {
				require.NoError(t, err)
				assert.Equal(t, schema.Pass, st.Status)
				require.NotNil(t, q.Pair)
				assert.Equal(t, 999.0, q.Pair.PSNR)
				assert.Equal(t, 1.0, q.Pair.SSIM)
				assert.Equal(t, "correctness/artifacts/reference/a-invert.png", q.Pair.Reference)
				return
			}
			require.Error(t, err)
			assert.Equal(t, schema.Fail, st.Status)
			assert.Contains(t, st.Error, tc.msg)
		})
	}
}

// A pair that replays the case's noise is held to it: the sha256 the server's records
// line states for the pair's request must be that of the noise file the case drew (under
// its scratch, pytest's _qcurrent link resolved); another noise, or none stated, fails
// the pair, naming both.
func TestPairLatentsHeldToTheCase(t *testing.T) {
	work := t.TempDir()
	caseDir := filepath.Join(work, "correctness", "basetemp", "test_x_q0")
	require.NoError(t, os.MkdirAll(caseDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(caseDir, "initial-latents.raw"), []byte("the case's noise"), 0o644))
	require.NoError(t, os.Symlink(caseDir, filepath.Join(work, "correctness", "basetemp", "test_x_qcurrent")))
	noise := bytesSHA256([]byte("the case's noise"))
	pair := &family.QualityPair{CaseLatents: "basetemp/test_x*/initial-latents.raw", ServedLatents: "observation.initial_latents_sha256"}
	for _, tc := range []struct{ name, records, want string }{
		{"the case's noise", `{"request_id": "r1", "observation": {"initial_latents_sha256": "` + noise + `"}}`, ""},
		{"another noise", `{"request_id": "r1", "observation": {"initial_latents_sha256": "` + bytesSHA256([]byte("x")) + `"}}`, "did not start from the case's own noise"},
		{"none stated", `{"request_id": "r1", "observation": {}}`, "state no observation.initial_latents_sha256 for request r1"},
		{"another request's", `{"request_id": "r2", "observation": {"initial_latents_sha256": "` + noise + `"}}`, "state no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, _ := FakeFamily{}.Describe(family.Env{}, family.Row{})
			r := &row{env: family.Env{Work: work}, ev: &RowEvidence{Dir: t.TempDir()}, spec: spec}
			require.NoError(t, os.MkdirAll(r.ev.Path("serve"), 0o755))
			require.NoError(t, os.WriteFile(r.ev.Path(schema.RecordsFile), []byte(tc.records+"\n"), 0o644))
			l := r.gatherLatents(pair, filepath.Join(work, caseScratch), "r1")
			err := judgeLatents(l, "r1")
			assert.Equal(t, noise, l.CaseSHA256)
			if tc.want == "" {
				assert.NoError(t, err)
				assert.Equal(t, noise, l.Served)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
