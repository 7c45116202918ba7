package qwenimage

import (
	"cmp"
	"fmt"
	"path/filepath"
	"qualkit/internal/wire"
	"sort"

	"github.com/BurntSushi/toml"
)

// e2eModel is the part of an e9132e79 e2e MODEL.toml the build reads: how testcase
// inputs come from the manifest, and which of them become builder flags.
type e2eModel struct {
	Defaults map[string]struct {
		InputFields []struct {
			Input            string `toml:"input"`
			Manifest         string `toml:"manifest"`
			Default          any    `toml:"default"`
			RequiredManifest string `toml:"required_manifest"`
		} `toml:"input_fields"`
		BuildCLIArgs []struct {
			Flag  string `toml:"flag"`
			Input string `toml:"input"`
		} `toml:"build_cli_args"`
	} `toml:"e2e_defaults"`
}

// buildArgs is the e9132e79 e2e orchestrator's bundle build (the arguments after the
// program, and the environment), derived as tests/e2e_harness/orchestrator.py
// (_resolve_bundle, ~315-420) does from the checkout's manifest and MODEL.toml; unlike
// it, the row always passes --model-revision.
func buildArgs(checkout string, l Layout, m *Manifest, out, timing string) (args, env []string, err error) {
	tc, ok := m.Testcase()
	if !ok {
		return nil, nil, fmt.Errorf("the manifest has no testcase %q", Profile)
	}
	var model e2eModel
	if _, err := toml.DecodeFile(filepath.Join(checkout, l.E2EModel), &model); err != nil {
		return nil, nil, fmt.Errorf("TRTMC e2e definition: %w", err)
	}
	def, ok := model.Defaults[m.Strategy]
	if !ok {
		return nil, nil, fmt.Errorf("TRTMC e2e definition %s has no [e2e_defaults.%s] for the manifest's task_strategy", l.E2EModel, m.Strategy)
	}
	inputs := map[string]string{}
	for _, f := range def.InputFields {
		if v, ok := tc.raw[f.Manifest]; ok {
			inputs[f.Input] = wire.JSONText(v)
		} else if _, need := tc.raw[f.RequiredManifest]; f.Default != nil && (f.RequiredManifest == "" || need) {
			inputs[f.Input] = fmt.Sprint(f.Default)
		}
	}
	args = []string{"-m", "tensorrt_model_connect.__main__", "build", m.HFID, "-o", out}
	if v, ok := m.BuildArgs["max_cache_length"]; ok {
		args = append(args, "--max-cache-length", wire.JSONText(v))
	} else if v, ok := m.raw["max_cache_length"]; ok {
		args = append(args, "--max-cache-length", wire.JSONText(v))
	}
	args = append(args, "--model-revision", cmp.Or(m.HFRevision, Revision))
	for _, a := range def.BuildCLIArgs {
		v, ok := inputs[a.Input]
		switch {
		case !ok:
		case v == "true":
			args = append(args, a.Flag)
		case v != "false":
			args = append(args, a.Flag, v)
		}
	}
	if m.Precision != "" && m.Precision != "fp32" {
		args = append(args, "--precision", m.Precision)
	}
	args = append(args, "--build-timing-json", timing)
	for name := range m.BuildEnv {
		env = append(env, name+"="+m.buildEnvPath(checkout, l, name))
	}
	sort.Strings(env)
	return args, env, nil
}

// jsonText is a JSON value as text: a string without quotes, anything else as written.
