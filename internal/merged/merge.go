package merged

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"qualkit/internal/attest"
	"qualkit/internal/schema"
)

// Input is one shard folder as `make shard` writes it: its run folder and junit.xml.
// Name is the folder's name without a "shard-" prefix (the CI artifact's name).
type Input struct {
	Name, RunDir, JUnit string
}

func ReadInput(dir string) (Input, error) {
	in := Input{Name: strings.TrimPrefix(filepath.Base(filepath.Clean(dir)), "shard-"), JUnit: filepath.Join(dir, JUnitFile)}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return in, fmt.Errorf("shard %s: %w", dir, err)
	}
	var runs []string
	for _, e := range entries {
		if e.IsDir() && isFile(filepath.Join(dir, e.Name(), "run.json")) {
			runs = append(runs, e.Name())
		}
	}
	switch {
	case len(runs) != 1:
		return in, fmt.Errorf("shard %s: holds %d run folders (%s), want exactly one (make shard writes one)", dir, len(runs), strings.Join(runs, ", "))
	case !isFile(in.JUnit):
		return in, fmt.Errorf("shard %s: no %s (make shard copies the shard's JUnit there)", dir, JUnitFile)
	}
	in.RunDir = filepath.Join(dir, runs[0])
	return in, nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// Merge writes the merged run of the shards into out (which must not exist yet). Each
// shard must pass verify and answer the matrix, and the shards must cover it exactly
// once from one commit; otherwise the error lists every problem and out is removed.
func Merge(out, matrixPath string, inputs []Input, verify func(runDir, junit string) error) (m *Manifest, err error) {
	if _, err := os.Stat(out); err == nil {
		return nil, fmt.Errorf("%s exists: give a new folder for the merged run", out)
	}
	matrix, err := os.ReadFile(matrixPath)
	if err != nil {
		return nil, err
	}
	rows, err := MatrixRows(matrix)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", matrixPath, err)
	}
	created, err := MatrixCreated(matrix)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", matrixPath, err)
	}
	var problems []string
	m = &Manifest{}
	byName := map[string]Input{}
	for _, in := range inputs {
		byName[in.Name] = in
		if err := verify(in.RunDir, in.JUnit); err != nil {
			problems = append(problems, fmt.Sprintf("shard %s does not check: %v", in.Name, err))
			continue
		}
		s, err := describe(in)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		m.Shards = append(m.Shards, s)
		problems = append(problems, Answer(rows, created, in.Name, in.RunDir)...)
	}
	if len(m.Shards) > 0 {
		problems = append(problems, Gaps(rows, m.Shards)...)
		problems = append(problems, Verifications(m.Shards, func(s Shard, row string) (RowResult, error) {
			return ReadRowResult(byName[s.Name].RunDir, row)
		})...)
	}
	if len(inputs) == 0 {
		problems = append(problems, "no shard given")
	}
	if len(problems) > 0 {
		return nil, errors.New("merge refused:\n  - " + strings.Join(problems, "\n  - "))
	}
	defer func() {
		if err != nil {
			os.RemoveAll(out)
		}
	}()
	sort.Slice(m.Shards, func(i, j int) bool { return m.Shards[i].Name < m.Shards[j].Name })
	m.Version, m.Commit, m.Dirty, m.MergedID = Version, m.Shards[0].Commit, m.Shards[0].Dirty, ID(m.Shards)
	for _, s := range m.Shards {
		if err := os.CopyFS(filepath.Join(out, filepath.FromSlash(s.Dir)), os.DirFS(byName[s.Name].RunDir)); err != nil {
			return nil, err
		}
		b, err := os.ReadFile(byName[s.Name].JUnit)
		if err == nil {
			err = os.WriteFile(filepath.Join(out, filepath.FromSlash(s.JUnit)), b, 0o644)
		}
		if err != nil {
			return nil, err
		}
		if !s.CorrectnessOnly {
			m.Rows = append(m.Rows, s.Rows...)
		}
	}
	sort.Strings(m.Rows)
	files, err := Render(out, *m)
	if err != nil {
		return nil, err
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	files[MatrixFile], files[ManifestFile] = matrix, append(manifest, '\n')
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	return m, WriteSums(out)
}

// describe reads what a verified shard claims: its run id, commit and rows, and the
// sha256 of its checksum list and JUnit.
func describe(in Input) (Shard, error) {
	var info schema.RunInfo
	if err := schema.ReadJSON(filepath.Join(in.RunDir, schema.RunFile), &info); err != nil {
		return Shard{}, fmt.Errorf("shard %s: run.json: %v", in.Name, err)
	}
	sums, err := fileSHA(filepath.Join(in.RunDir, SumsFile))
	if err != nil {
		return Shard{}, fmt.Errorf("shard %s: %v", in.Name, err)
	}
	junit, err := fileSHA(in.JUnit)
	if err != nil {
		return Shard{}, fmt.Errorf("shard %s: %v", in.Name, err)
	}
	sig := attest.Inspect(in.RunDir)
	if len(sig.Problems) > 0 {
		return Shard{}, fmt.Errorf("shard %s: %s: %s", in.Name, attest.File, sig.Problems[0].Got)
	}
	dir, jpath := ShardPaths(in.Name, info.RunID)
	return Shard{Name: in.Name, RunID: info.RunID, Dir: dir, JUnit: jpath, SumsSHA256: sums, JUnitSHA256: junit,
		Commit: info.HarnessCommit, Dirty: info.HarnessDirty, Rows: info.Rows, CorrectnessOnly: info.CorrectnessOnly,
		Signed: sig.Signed, KeyID: sig.KeyID}, nil
}

// Render derives the merged run's own files from the shards kept under dir, as m's
// version renders them.
func Render(dir string, m Manifest) (map[string][]byte, error) {
	rowLines, status, verified := map[string]string{}, map[string]string{}, map[string]string{}
	var header string
	var junits [][]byte
	for _, s := range m.Shards {
		sdir := filepath.Join(dir, filepath.FromSlash(s.Dir))
		for _, r := range s.Rows {
			b, err := os.ReadFile(filepath.Join(sdir, r, "row.md"))
			if err != nil {
				return nil, fmt.Errorf("shard %s: %w", s.Name, err)
			}
			key := r
			if s.CorrectnessOnly {
				key = s.Name + "/" + r
			}
			if header, rowLines[key], err = splitRowMD(b); err != nil {
				return nil, fmt.Errorf("shard %s row %s: %w", s.Name, r, err)
			}
			res, err := ReadRowResult(sdir, r)
			if err != nil {
				return nil, fmt.Errorf("shard %s: %v", s.Name, err)
			}
			switch {
			case !s.CorrectnessOnly:
				status[r] = res.Status
				if res.FailureKind != "" {
					status[r] += " (" + res.FailureKind + ")"
				}
			case res.Correctness != nil:
				verified[r] = fmt.Sprintf("; correctness verified separately (shard %s: %d executed, %d skipped)", s.Name, res.Correctness.Executed, res.Correctness.Skipped)
			}
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(s.JUnit)))
		if err != nil {
			return nil, err
		}
		junits = append(junits, b)
	}
	for r, note := range verified {
		status[r] += note // after the loop: the shards come in name order, not public first
	}
	junit, err := JUnit(junits)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{SummaryFile: Summary(m, header, rowLines), PRFile: PR(m, status), JUnitFile: junit}
	if m.Version < 2 {
		return files, nil
	}
	p, err := readPages(dir, m, status)
	if err != nil {
		return nil, err
	}
	files[PRFile] = p.markdown(header, rowLines)
	if files[IndexFile], err = p.html(); err != nil {
		return nil, err
	}
	return files, nil
}

// WriteSums writes dir's SHA256SUMS over every other file under it, sorted by path.
func WriteSums(dir string) error {
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		if err != nil || d.IsDir() || rel == SumsFile {
			return err
		}
		sum, err := fileSHA(p)
		lines = append(lines, sum+"  "+filepath.ToSlash(rel)+"\n")
		return err
	})
	if err != nil {
		return err
	}
	slices.SortFunc(lines, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
	return os.WriteFile(filepath.Join(dir, SumsFile), []byte(strings.Join(lines, "")), 0o644)
}

func fileSHA(p string) (string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	return sumHex(b), nil
}
