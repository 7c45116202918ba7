package harness

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/csv"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"qualkit/internal/schema"
)

// Venv names the project venv and the lock it was made from (scripts/constraints.txt,
// every distribution pinned name==version). Its installed set is part of a run's
// provenance: the venv is ignored by git, yet AIPerf and pytest in it decide results.
type Venv struct {
	Dir  string // the venv (.venv)
	Lock string // the constraints file it must match
	// Known is the pins' known RECORD digests (VenvRecordsFile), each installed
	// distribution's must be; "" holds the venv to its lock and RECORDs alone.
	Known string
}

// venvOwn are what `python -m venv` installs by itself, at the interpreter's versions:
// not in the lock, never imported by a run.
var venvOwn = map[string]bool{"pip": true, "setuptools": true}

// readVenv lists the venv's installed distributions as "name==version record-sha256"
// (the sha256 of its RECORD, which lists every installed file with its hash), and says
// where the set departs from the lock and which files of site-packages no RECORD lists.
func readVenv(v Venv) (set []string, problems []string, err error) {
	lock, err := readLock(v.Lock)
	if err != nil {
		return nil, nil, err
	}
	ds, err := dists(v.Dir)
	if err != nil {
		return nil, nil, err
	}
	installed := map[string]bool{}
	owned := map[string]bool{}
	for _, d := range ds {
		installed[d.key] = true
		set = append(set, d.key+"=="+d.version+" "+bytesSHA256(d.rec))
		problems = append(problems, recordProblems(d.site, d.key, d.rec)...)
		for _, f := range recordFiles(d.rec) {
			owned[f] = true
		}
		switch want, pinned := lock[d.key]; {
		case venvOwn[d.key]:
		case !pinned:
			problems = append(problems, fmt.Sprintf("venv: %s==%s is installed but not in %s", d.key, d.version, filepath.Base(v.Lock)))
		case want != d.version:
			problems = append(problems, fmt.Sprintf("venv: %s is %s, %s pins %s", d.key, d.version, filepath.Base(v.Lock), want))
		}
	}
	for key, want := range lock {
		if !installed[key] {
			problems = append(problems, fmt.Sprintf("venv: %s==%s is pinned in %s but not installed", key, want, filepath.Base(v.Lock)))
		}
	}
	problems = append(problems, unownedFiles(ds[0].site, owned)...)
	if v.Known != "" {
		problems = append(problems, knownRecordProblems(v)...)
	}
	sort.Strings(set)
	sort.Strings(problems)
	return set, problems, nil
}

// dist is one installed distribution, named as PEP 503 compares them.
type dist struct {
	key, version, site string
	rec                []byte
}

func dists(dir string) ([]dist, error) {
	infos, _ := filepath.Glob(filepath.Join(dir, "lib", "python3*", "site-packages", "*.dist-info"))
	if len(infos) == 0 {
		return nil, fmt.Errorf("venv %s has no installed distributions (run `make setup`)", dir)
	}
	var out []dist
	for _, d := range infos {
		name, version, err := distMetadata(filepath.Join(d, "METADATA"))
		if err != nil {
			return nil, err
		}
		rec, err := os.ReadFile(filepath.Join(d, "RECORD"))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d, err)
		}
		out = append(out, dist{key: normalizeDist(name), version: version, site: filepath.Dir(d), rec: rec})
	}
	return out, nil
}

var pin = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)`)

func readLock(p string) (map[string]string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("the venv's lock: %w", err)
	}
	lock := map[string]string{}
	for line := range strings.Lines(string(b)) {
		if m := pin.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			lock[normalizeDist(m[1])] = m[2]
		}
	}
	return lock, nil
}

func distMetadata(p string) (name, version string, err error) {
	f, err := os.Open(p)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() && sc.Text() != "" {
		if v, ok := strings.CutPrefix(sc.Text(), "Name: "); ok {
			name = strings.TrimSpace(v)
		} else if v, ok := strings.CutPrefix(sc.Text(), "Version: "); ok {
			version = strings.TrimSpace(v)
		}
	}
	if name == "" || version == "" {
		return "", "", fmt.Errorf("%s: no Name and Version", p)
	}
	return name, version, nil
}

var distSeparators = regexp.MustCompile(`[-_.]+`)

// normalizeDist is a name as PEP 503 compares them.
func normalizeDist(n string) string {
	return distSeparators.ReplaceAllString(strings.ToLower(n), "-")
}

// venvProvenance folds the venv's set into p: its sha256 and size, and each departure
// from the lock as a change that makes the tree dirty (no such run is qualified).
func venvProvenance(v Venv, p schema.Provenance) (schema.Provenance, []string) {
	if v.Dir == "" {
		return p, nil
	}
	set, problems, err := readVenv(v)
	if err != nil {
		problems = []string{"venv: " + err.Error()}
	}
	p.VenvSHA256, p.VenvPackages = schema.VenvSetSHA256(set), len(set)
	if len(problems) > 0 {
		p.Dirty = true
		for _, pr := range problems {
			if len(p.Changes) < schema.MaxChanges {
				p.Changes = append(p.Changes, pr)
			}
		}
	}
	return p, set
}

func recordFiles(rec []byte) []string {
	r := csv.NewReader(bytes.NewReader(rec))
	r.FieldsPerRecord = -1
	rows, _ := r.ReadAll()
	var out []string
	for _, f := range rows {
		if len(f) > 0 && f[0] != "" {
			out = append(out, path.Clean(f[0]))
		}
	}
	return out
}

// unownedFiles names every file under site that no RECORD lists: dropped in after
// install, neither the lock nor the known digests see it, yet it runs (a .pth at every start).
func unownedFiles(site string, owned map[string]bool) []string {
	var problems []string
	err := filepath.WalkDir(site, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(site, p)
		if rel = filepath.ToSlash(rel); owned[rel] {
			return nil
		}
		if strings.HasSuffix(rel, ".pth") {
			problems = append(problems, fmt.Sprintf("venv: site-packages/%s is a .pth file no installed distribution's RECORD lists: Python runs its import lines at every start", rel))
		} else {
			problems = append(problems, fmt.Sprintf("venv: site-packages/%s is listed in no installed distribution's RECORD (put there after install)", rel))
		}
		return nil
	})
	if err != nil {
		problems = append(problems, "venv: "+err.Error())
	}
	return problems
}

// recordChecks caches each RECORD's verdict: the venv (1.2 GB) is hashed once a process.
var recordChecks sync.Map // site-packages + "\x00" + RECORD's sha256 -> []string

// recordProblems names each file a RECORD lists that differs from the hash pip wrote at
// install (edited afterwards, METADATA included); a RECORD rewritten to match is caught
// by the known digests (knownRecordProblems).
func recordProblems(site, dist string, rec []byte) []string {
	key := site + "\x00" + bytesSHA256(rec)
	if v, ok := recordChecks.Load(key); ok {
		return v.([]string)
	}
	var problems []string
	for line := range strings.Lines(string(rec)) {
		fields := strings.Split(strings.TrimSpace(line), ",")
		if len(fields) < 2 || fields[1] == "" {
			continue
		}
		algo, want, ok := strings.Cut(fields[1], "=")
		if !ok || algo != "sha256" {
			problems = append(problems, fmt.Sprintf("venv: %s's RECORD states %q for %s: not a sha256", dist, fields[1], fields[0]))
			continue
		}
		b, err := os.ReadFile(filepath.Join(site, filepath.FromSlash(fields[0])))
		if err != nil {
			problems = append(problems, fmt.Sprintf("venv: %s: %s, listed in its RECORD, is unreadable: %v", dist, fields[0], err))
			continue
		}
		got := sha256.Sum256(b)
		if base64.RawURLEncoding.EncodeToString(got[:]) != want {
			problems = append(problems, fmt.Sprintf("venv: %s: %s differs from the sha256 its RECORD states (edited after install)", dist, fields[0]))
		}
	}
	recordChecks.Store(key, problems)
	return problems
}

// VenvRecordsFile is the known RECORD digests of a clean install of the pins, per
// Python version and platform (scripts/venvrecords writes it): a venv whose digests
// differ is dirty, whatever its RECORDs say.
const VenvRecordsFile = "scripts/venv-records.txt"

// RecordDigest is the sha256 of a RECORD's lines that every clean install of the wheel
// writes alike, sorted: not what the install makes (../../../bin/ scripts naming this
// interpreter, __pycache__/, INSTALLER, REQUESTED, direct_url.json, RECORD).
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
	return bytesSHA256([]byte(strings.Join(lines, "\n")))
}

// VenvTag names the venv's Python version and platform ("py3.11-linux-amd64").
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
	ds, err := dists(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, d := range ds {
		if !venvOwn[d.key] {
			out[d.key+"=="+d.version] = RecordDigest(d.rec)
		}
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
	for _, dist := range slices.Sorted(maps.Keys(have)) {
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
