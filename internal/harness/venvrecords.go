package harness

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// A RECORD lists every file pip installed with its sha256, so a file edited afterwards
// is found (recordProblems); a RECORD rewritten to match edited files is not. The pins'
// known RECORDs close that: scripts/venvrecords writes, from a clean install, each pinned
// distribution's RecordDigest into scripts/venv-records.txt, per Python version and
// platform (the wheels differ), and a venv whose digests differ is dirty.

// VenvRecordsFile is the known RECORD digests, relative to the repository root.
const VenvRecordsFile = "scripts/venv-records.txt"

// RecordDigest is the sha256 of a RECORD's lines that every clean install of the same
// wheel writes alike: each file the wheel holds, with its hash, sorted. Left out are
// what the install itself makes and hashes: the scripts pip writes with this venv's
// interpreter in their first line (../../../bin/), the bytecode it compiles (its
// timestamps, __pycache__/), and INSTALLER, REQUESTED, direct_url.json and RECORD.
func RecordDigest(rec []byte) string {
	var lines []string
	for line := range strings.Lines(string(rec)) {
		fields := strings.Split(strings.TrimSpace(line), ",")
		if len(fields) < 2 || fields[1] == "" {
			continue // RECORD itself
		}
		p := fields[0]
		base := p[strings.LastIndex(p, "/")+1:]
		switch {
		case strings.HasPrefix(p, "../../../bin/"), strings.Contains(p, "__pycache__/"):
			continue
		case strings.HasSuffix(filepath.Dir(p), ".dist-info") && (base == "INSTALLER" || base == "REQUESTED" || base == "direct_url.json"):
			continue
		}
		lines = append(lines, p+","+fields[1])
	}
	sort.Strings(lines)
	s := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(s[:])
}

// VenvTag names the Python version and platform a venv's wheels were made for
// ("py3.11-linux-amd64"): the venv is this host's.
func VenvTag(dir string) (string, error) {
	libs, _ := filepath.Glob(filepath.Join(dir, "lib", "python3*"))
	if len(libs) != 1 {
		return "", fmt.Errorf("venv %s: want one lib/python3.* folder, found %d", dir, len(libs))
	}
	return "py" + strings.TrimPrefix(filepath.Base(libs[0]), "python") + "-" + runtime.GOOS + "-" + runtime.GOARCH, nil
}

// VenvRecords are the RecordDigest of each distribution of the venv, by "name==version"
// (names as PEP 503 compares them), the venv's own (pip, setuptools) left out.
func VenvRecords(dir string) (map[string]string, error) {
	infos, _ := filepath.Glob(filepath.Join(dir, "lib", "python3*", "site-packages", "*.dist-info"))
	if len(infos) == 0 {
		return nil, fmt.Errorf("venv %s has no installed distributions (run `make setup`)", dir)
	}
	out := map[string]string{}
	for _, d := range infos {
		name, version, err := distMetadata(filepath.Join(d, "METADATA"))
		if err != nil {
			return nil, err
		}
		if venvOwn[normalizeDist(name)] {
			continue
		}
		rec, err := os.ReadFile(filepath.Join(d, "RECORD"))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d, err)
		}
		out[normalizeDist(name)+"=="+version] = RecordDigest(rec)
	}
	return out, nil
}

// readKnownRecords reads the known digests of one tag: "<tag> <name>==<version> <digest>"
// lines; nil when the file knows none for the tag.
func readKnownRecords(path, tag string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var known map[string]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s line %d: want \"<tag> <name>==<version> <sha256>\"", path, n)
		}
		if f[0] != tag {
			continue
		}
		if known == nil {
			known = map[string]string{}
		}
		known[f[1]] = f[2]
	}
	return known, nil
}

// knownRecordProblems compares the venv's digests with the known ones for its tag: a
// distribution whose files are not its clean install's, or one the list does not know,
// is a problem; a tag the list knows nothing of is one problem.
func knownRecordProblems(v Venv) []string {
	tag, err := VenvTag(v.Dir)
	if err != nil {
		return []string{"venv: " + err.Error()}
	}
	known, err := readKnownRecords(v.Known, tag)
	if errors.Is(err, fs.ErrNotExist) || err == nil && known == nil {
		return []string{fmt.Sprintf("venv: %s knows no clean install's RECORDs for %s, so the installed files cannot be held to the pins' (add them: go run ./scripts/venvrecords)", filepath.Base(v.Known), tag)}
	}
	if err != nil {
		return []string{"venv: " + err.Error()}
	}
	have, err := VenvRecords(v.Dir)
	if err != nil {
		return []string{"venv: " + err.Error()}
	}
	var problems []string
	for _, dist := range sortedKeys(have) {
		want, ok := known[dist]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("venv: %s is not among the clean install's distributions in %s (%s)", dist, filepath.Base(v.Known), tag))
		case want != have[dist]:
			problems = append(problems, fmt.Sprintf("venv: %s's installed files are not a clean install's: its RECORD digest is %s, %s knows %s (a RECORD rewritten to match edited files)",
				dist, have[dist][:12], filepath.Base(v.Known), want[:12]))
		}
	}
	return problems
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
