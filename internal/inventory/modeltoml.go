package inventory

import (
	"fmt"
	"os"

	"github.com/BurntSushi/toml"
)

// ModelFile is the part of a tests/e2e/models/<dir>/MODEL.toml that the inventory reads.
// Unknown keys are ignored: TRTMC adds plugin-specific ones freely.
type ModelFile struct {
	ID            string   `toml:"id"`
	TestManifests []string `toml:"test_manifests"`
	// Defaults is keyed by task strategy (diffusion_media_generation, ...).
	Defaults map[string]StrategyDefaults `toml:"e2e_defaults"`
}

// StrategyDefaults is one [e2e_defaults.<task_strategy>] table.
type StrategyDefaults struct {
	InputFields []InputField `toml:"input_fields"`
}

// InputField maps a manifest field onto a native task input. Default applies only when
// RequiredManifest is empty or that manifest field is present.
type InputField struct {
	Input            string `toml:"input"`
	Manifest         string `toml:"manifest"`
	Default          any    `toml:"default"`
	RequiredManifest string `toml:"required_manifest"`
}

func readModelFile(path, rel string) (ModelFile, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ModelFile{}, fmt.Errorf("read %s: %w", rel, err)
	}
	var m ModelFile
	if err := toml.Unmarshal(raw, &m); err != nil {
		return ModelFile{}, fmt.Errorf("parse %s: %w", rel, err)
	}
	return m, nil
}
