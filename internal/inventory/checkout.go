package inventory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// checkout is what was read from a TRTMC checkout.
type checkout struct {
	root      string // absolute
	testcases []testcase
	revisions map[string]string
}

// readCheckout reads every MODEL.toml and every manifest next to it. A directory without
// a single MODEL.toml is not a TRTMC checkout, and the error says which file was expected.
func readCheckout(dir string) (*checkout, error) {
	if dir == "" {
		return nil, errors.New("no TRTMC checkout given: pass the directory of a TensorRT-Model-Connect clone")
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("TRTMC checkout %s: %w", dir, err)
	}
	if st, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("TRTMC checkout %s: %w", dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("TRTMC checkout %s is not a directory", dir)
	}
	models, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(modelsGlob)))
	if err != nil {
		return nil, fmt.Errorf("TRTMC checkout %s: %w", dir, err)
	}
	if len(models) == 0 {
		return nil, fmt.Errorf("%s is not a TRTMC checkout: expected %s, found none", dir, modelsGlob)
	}
	sort.Strings(models)

	co := &checkout{root: root}
	seen := map[string]string{} // profile name -> manifest that defined it
	for _, modelPath := range models {
		tcs, err := readModelDir(root, modelPath)
		if err != nil {
			return nil, fmt.Errorf("TRTMC checkout %s: %w", dir, err)
		}
		for _, tc := range tcs {
			if prev, dup := seen[tc.name()]; dup {
				return nil, fmt.Errorf("TRTMC checkout %s: profile %q is defined twice: in %s and in %s", dir, tc.name(), prev, tc.manifestPath)
			}
			seen[tc.name()] = tc.manifestPath
			co.testcases = append(co.testcases, tc)
		}
	}
	if co.revisions, err = readRevisions(root); err != nil {
		return nil, fmt.Errorf("TRTMC checkout %s: %w", dir, err)
	}
	return co, nil
}

// readModelDir reads one model directory: its MODEL.toml, then every manifest it lists
// and every manifest on disk. A listed manifest that is missing is an error; one on disk
// that is not listed is read and marked unlisted (TRTMC does not run it).
func readModelDir(root, modelPath string) ([]testcase, error) {
	rel := relTo(root, modelPath)
	model, err := readModelFile(modelPath, rel)
	if err != nil {
		return nil, err
	}
	modelDir := filepath.Dir(modelPath)
	if model.ID == "" {
		model.ID = filepath.Base(modelDir)
	}

	listed := map[string]bool{}
	var paths []string
	for _, m := range model.TestManifests {
		p := filepath.Clean(filepath.Join(modelDir, filepath.FromSlash(m)))
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s lists test manifest %q, but %s does not exist", rel, m, relTo(root, p))
		} else if err != nil {
			return nil, fmt.Errorf("%s lists test manifest %q: %w", rel, m, err)
		}
		if !listed[p] {
			listed[p] = true
			paths = append(paths, p)
		}
	}
	onDisk, err := filepath.Glob(filepath.Join(modelDir, filepath.FromSlash(manifestGlob)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	sort.Strings(onDisk)
	for _, p := range onDisk {
		if !listed[p] {
			paths = append(paths, p)
		}
	}

	var out []testcase
	for _, p := range paths {
		mrel := relTo(root, p)
		cases, top, err := readManifest(p, mrel)
		if err != nil {
			return nil, err
		}
		for _, fields := range cases {
			out = append(out, testcase{
				manifestPath: mrel,
				listed:       listed[p],
				model:        model,
				modelDir:     modelDir,
				manifest:     top,
				fields:       fields,
			})
		}
	}
	return out, nil
}

func relTo(root, path string) string {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(rel)
}
