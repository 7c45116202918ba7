package inventory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"qualkit/internal/trtmc"
)

// checkout is what was read from a TRTMC checkout.
type checkout struct {
	root      string // absolute
	testcases []testcase
	revisions map[string]string
	tasks     trtmc.Tasks // the checkout's task vocabulary: its own task table, else the known one
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
	families, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(familyTestsGlob), filepath.FromSlash(manifestGlob)))
	if err != nil {
		return nil, fmt.Errorf("TRTMC checkout %s: %w", dir, err)
	}
	if len(models) == 0 && len(families) == 0 {
		return nil, fmt.Errorf("%s is not a TRTMC checkout: expected %s (layout of main e9132e79) or %s/%s (the families layout), found none",
			dir, modelsGlob, familyTestsGlob, manifestGlob)
	}
	sort.Strings(models)
	read := func(modelPath string) ([]testcase, error) { return readModelDir(root, modelPath) }
	if len(models) == 0 {
		// The families layout: one entry per family's tests folder.
		models = nil
		for _, m := range families {
			if d := filepath.Dir(filepath.Dir(m)); len(models) == 0 || models[len(models)-1] != d {
				models = append(models, d)
			}
		}
		read = func(testsDir string) ([]testcase, error) { return readFamilyDir(root, testsDir) }
	}

	co := &checkout{root: root, tasks: trtmc.ReadTasks(root)}
	seen := map[string]string{} // profile name -> manifest that defined it
	for _, modelPath := range models {
		tcs, err := read(modelPath)
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

	return readManifests(root, paths, listed, model, modelDir)
}

func readManifests(root string, paths []string, listed map[string]bool, model ModelFile, modelDir string) ([]testcase, error) {
	var out []testcase
	for _, p := range paths {
		mrel := relTo(root, p)
		cases, top, err := readManifest(p, mrel)
		if err != nil {
			return nil, err
		}
		for _, fields := range cases {
			out = append(out, testcase{manifestPath: mrel, listed: listed == nil || listed[p], model: model, modelDir: modelDir, manifest: top, fields: fields})
		}
	}
	return out, nil
}

// readFamilyDir reads one family's manifests in the families layout. There is no
// MODEL.toml: the family's test_e2e.py parametrizes over every manifest of the folder,
// and the testcase's Task says where its reference image comes from (referenceImage).
func readFamilyDir(root, testsDir string) ([]testcase, error) {
	model := ModelFile{ID: filepath.Base(filepath.Dir(testsDir))}
	paths, err := filepath.Glob(filepath.Join(testsDir, filepath.FromSlash(manifestGlob)))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	return readManifests(root, paths, nil, model, testsDir) // every manifest is run: all listed
}

func relTo(root, path string) string {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(rel)
}
