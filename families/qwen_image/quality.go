package qwenimage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"qualkit/internal/family"
	"qualkit/internal/fixtures"
	"qualkit/internal/schema"
)

// quality reads TRTMC's criteria from the checkout's threshold_overrides: pixel bounds
// for every output, and PSNR, SSIM and the deviation ratio for the case's own pair
// against the HF image the case wrote (Layout.PairReference), never one computed here.
func (a TRTMC) quality(env family.Env, c family.Row) (family.QualitySpec, error) {
	l, err := a.layout()
	if err != nil {
		return family.QualitySpec{}, err
	}
	t, err := ReadThresholds(a.Config.Checkout, l)
	if err != nil {
		return family.QualitySpec{}, err
	}
	var missing []string
	get := func(key string) float64 {
		v, ok := t[key]
		if !ok {
			missing = append(missing, key)
		}
		return v
	}
	cr := schema.QualityCriteria{MeanMin: ptr(get("min_pixel_mean")), MeanMax: ptr(get("max_pixel_mean")), StdMin: ptr(get("min_pixel_std")),
		PSNRMin: ptr(get("psnr")), SSIMMin: ptr(get("ssim")), RefStdRatioMin: ptr(get("min_reference_std_ratio")),
		RefStdRatioWhenRefStd: get("reference_min_pixel_std_for_ratio"), PairMetric: l.PairMetric}
	if len(missing) > 0 {
		return family.QualitySpec{}, fmt.Errorf("TRTMC thresholds %s: no %s", l.Thresholds, missing[0])
	}
	pair, err := a.qualityPair(env, c, l)
	if err != nil {
		return family.QualitySpec{}, err
	}
	return family.QualitySpec{Files: []string{filepath.Join(a.Config.Checkout, l.Thresholds)}, Criteria: cr, Pair: pair}, nil
}

// qualityPair finds the case's own pair in the workload: its prompt, an image whose pool
// record names the test image's sha256, and its settings.
func (a TRTMC) qualityPair(env family.Env, c family.Row, l Layout) (*family.QualityPair, error) {
	m, err := ReadManifest(a.Config.Checkout, l)
	if err != nil {
		return nil, err
	}
	tc, ok := m.Testcase()
	if !ok || tc.TestImage == "" || tc.Prompt == "" {
		return nil, fmt.Errorf("TRTMC manifest %s: the testcase %q with a prompt and a test_image", l.Manifest, Profile)
	}
	testImage := filepath.Join(a.Config.Checkout, l.FamilyDir, tc.TestImage)
	b, err := os.ReadFile(testImage)
	if err != nil {
		return nil, fmt.Errorf("the correctness case's test image: %w", err)
	}
	sum := sha256.Sum256(b)
	testSHA := hex.EncodeToString(sum[:])
	fx, err := fixtures.Load(filepath.Join(env.Root, c.Fixtures))
	if err != nil {
		return nil, err
	}
	fix := fmt.Sprintf("add to %s a pair with the case's prompt and an image decoded from %s (fixtures/images/generate.py --photo), sent with the case's settings", c.Fixtures, testImage)
	var found *fixtures.Pair
	for i, p := range fx.Pairs {
		if p.Instruction == tc.Prompt && strings.Contains(fx.Image(p.Image).Provenance, testSHA) {
			found = &fx.Pairs[i]
			break
		}
	}
	if found == nil {
		return nil, fmt.Errorf("no pair of %s is the correctness case's own (prompt %q, an image whose pool record names %s sha256 %s): the reference criteria could not be applied; %s",
			c.Fixtures, tc.Prompt, tc.TestImage, testSHA, fix)
	}
	if bad := caseSettingsDiffer(tc, m, fx.FormSettings()); len(bad) > 0 {
		return nil, fmt.Errorf("%s settings are not the correctness case's (%s): %s; %s", c.Fixtures, l.Manifest, strings.Join(bad, "; "), fix)
	}
	pair := &family.QualityPair{Image: fx.ImagePath(found.Image), Prompt: found.Instruction, Reference: l.PairReference, Noise: pairNoise}
	if a.replaysLatents(l) {
		pair.Noise = fmt.Sprintf(pairReplayNoise, tc.Seed)
		pair.CaseLatents, pair.ServedLatents = caseLatents, servedLatents
	}
	return pair, nil
}

// replaysLatents says whether the row's requests carry latent_seed: perf-serve replays
// it (latents.py @ d3e1a549), and the families case draws its own latents the same way.
func (a TRTMC) replaysLatents(l Layout) bool {
	return a.perfServe() && l.Name == LayoutFamilies
}

// Where the families case keeps the noise it drew (test_e2e.py @ 9777fef7 § _native:
// tmp_path / "initial-latents.raw", under --basetemp, relative to the case's scratch),
// and where perf-serve's records state the replayed noise's sha256 (app.py @ 3878755c §
// execute: observation.initial_latents_sha256).
const (
	caseLatents   = "basetemp/test_official_checkpoint_e2e*/initial-latents.raw"
	servedLatents = "observation.initial_latents_sha256"
)

// pairReplayNoise states, with the case's seed, that the served pair has the case's noise.
const pairReplayNoise = "same: the request carries latent_seed %[1]d, which TRTMC's perf-serve replays as NumPy's default_rng(%[1]d).standard_normal((1, 1, 16, H/8, W/8), float32) (latents.py @ d3e1a549), byte for byte the noise the case draws for its own TRT and HF runs, default_rng(%[1]d).standard_normal((16, H/8, W/8)) (test_e2e.py @ 9777fef7 § _initial_latents): the served noise's sha256 (records) equals the case's initial-latents.raw. The psnr/ssim bounds are the case's own, for two implementations on the same noise."

// caseSettingsDiffer lists the workload settings that are not the case's.
func caseSettingsDiffer(tc Testcase, m *Manifest, s map[string]string) []string {
	w, h := m.outputSize(tc)
	var bad []string
	if got, want := s["size"], fmt.Sprintf("%dx%d", w, h); got != want {
		bad = append(bad, fmt.Sprintf("size %q, the case %q", got, want))
	}
	if got := s["negative_prompt"]; got != tc.NegativePrompt {
		bad = append(bad, fmt.Sprintf("negative_prompt %q, the case %q", got, tc.NegativePrompt))
	}
	for _, n := range []struct {
		key  string
		want float64
	}{{"seed", float64(tc.Seed)}, {"num_inference_steps", float64(tc.NumInferenceSteps)}, {"true_cfg_scale", tc.CFGScale}} {
		got, err := strconv.ParseFloat(s[n.key], 64)
		if err != nil || got != n.want {
			bad = append(bad, fmt.Sprintf("%s %q, the case %g", n.key, s[n.key], n.want))
		}
	}
	return bad
}

func ptr(v float64) *float64 { return &v }

// pairNoise is why the served pair is not the case's reference without latent replay:
// the case's HF reference starts from its own latents (families/qwen_image/tests/
// test_e2e.py @ 9777fef7), the server from the request's seed (perf-serve's latent_seed
// replay, latents.py @ d3e1a549, is used only where the families case draws the same
// noise: replaysLatents); the bounds are TRTMC's cross-implementation ones, and identity
// is the native Task's stage.
const pairNoise = "differs: the server seeds TRTMC's generator from the request's seed (42); the case's HF reference starts from latents the case makes itself. The psnr/ssim bounds are TRTMC's loose cross-implementation ones, not identity."
