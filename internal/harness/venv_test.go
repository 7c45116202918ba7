package harness

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/schema"
)

// fakeVenv lays out site-packages with the given distributions (name -> version).
func fakeVenv(t *testing.T, dists map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	sp := filepath.Join(dir, "lib", "python3.11", "site-packages")
	for name, version := range dists {
		d := filepath.Join(sp, name+"-"+version+".dist-info")
		require.NoError(t, os.MkdirAll(d, 0o755))
		meta := []byte("Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n\nbody\nName: not-this\n")
		code := []byte("# " + name + " " + version + "\n")
		require.NoError(t, os.WriteFile(filepath.Join(d, "METADATA"), meta, 0o644))
		require.NoError(t, os.MkdirAll(filepath.Join(sp, name), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(sp, name, "__init__.py"), code, 0o644))
		info := filepath.Base(d)
		rec := recordLine(name+"/__init__.py", code) + recordLine(info+"/METADATA", meta) + info + "/RECORD,,\n"
		require.NoError(t, os.WriteFile(filepath.Join(d, "RECORD"), []byte(rec), 0o644))
	}
	return dir
}

// recordLine is a RECORD line as pip writes it: path, sha256 in unpadded URL-safe base64, size.
func recordLine(path string, b []byte) string {
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%s,sha256=%s,%d\n", path, base64.RawURLEncoding.EncodeToString(sum[:]), len(b))
}

func writeLock(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "constraints.txt")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func TestVenvMatchingItsLock(t *testing.T) {
	v := Venv{Dir: fakeVenv(t, map[string]string{"aiperf": "0.13.0", "Typing_Extensions": "4.15.0", "pip": "23.2.1"}),
		Lock: writeLock(t, "# pins\naiperf==0.13.0\ntyping-extensions==4.15.0 ; python_version >= '3.9'\n")}
	set, problems, err := readVenv(v)
	require.NoError(t, err)
	assert.Empty(t, problems, "pip is the venv's own; names compare as PEP 503 says")
	require.Len(t, set, 3)
	assert.Regexp(t, `^aiperf==0\.13\.0 [0-9a-f]{64}$`, set[0])
	p, _ := venvProvenance(v, schema.Provenance{Commit: "c"})
	assert.False(t, p.Dirty)
	assert.Equal(t, schema.VenvSetSHA256(set), p.VenvSHA256)
	assert.Equal(t, 3, p.VenvPackages)
}

// A venv that departs from its lock makes the tree dirty, each departure named.
func TestVenvDepartingFromItsLock(t *testing.T) {
	v := Venv{Dir: fakeVenv(t, map[string]string{"aiperf": "0.14.0", "evil-plugin": "1.0"}),
		Lock: writeLock(t, "aiperf==0.13.0\npytest==9.2.0\n")}
	p, _ := venvProvenance(v, schema.Provenance{Commit: "c"})
	assert.True(t, p.Dirty)
	assert.Equal(t, []string{
		"venv: aiperf is 0.14.0, constraints.txt pins 0.13.0",
		"venv: evil-plugin==1.0 is installed but not in constraints.txt",
		"venv: pytest==9.2.0 is pinned in constraints.txt but not installed",
	}, p.Changes)

	// The same versions with another RECORD (a different build, or files changed and
	// the record rewritten) change the set's sha256.
	good := Venv{Dir: fakeVenv(t, map[string]string{"aiperf": "0.13.0"}), Lock: writeLock(t, "aiperf==0.13.0\n")}
	before, _ := venvProvenance(good, schema.Provenance{})
	rec := filepath.Join(good.Dir, "lib", "python3.11", "site-packages", "aiperf-0.13.0.dist-info", "RECORD")
	require.NoError(t, os.WriteFile(rec, []byte("aiperf/__init__.py,sha256=def,11\n"), 0o644))
	after, _ := venvProvenance(good, schema.Provenance{})
	assert.NotEqual(t, before.VenvSHA256, after.VenvSHA256)
	assert.False(t, before.Dirty, "%v", before.Changes)
	assert.True(t, after.Dirty, "a RECORD whose hashes are not the files'")

	// No venv at all is a change too, never a silent pass.
	missing, _ := venvProvenance(Venv{Dir: t.TempDir(), Lock: good.Lock}, schema.Provenance{})
	assert.True(t, missing.Dirty)
	assert.Contains(t, missing.Changes[0], "has no installed distributions (run `make setup`)")
}

// Another version under the pin's name: its METADATA edited to read as the pin after pip
// installed it. The lock check sees the pin; the RECORD pip wrote does not match the file.
func TestVenvWithADoctoredVersionIsDirty(t *testing.T) {
	v := Venv{Dir: fakeVenv(t, map[string]string{"aiperf": "0.14.0"}), Lock: writeLock(t, "aiperf==0.13.0\n")}
	info := filepath.Join(v.Dir, "lib", "python3.11", "site-packages", "aiperf-0.14.0.dist-info")
	meta := filepath.Join(info, "METADATA")
	b, err := os.ReadFile(meta)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(meta, bytes.Replace(b, []byte("Version: 0.14.0"), []byte("Version: 0.13.0"), 1), 0o644))
	p, _ := venvProvenance(v, schema.Provenance{Commit: "c"})
	assert.True(t, p.Dirty)
	assert.Equal(t, []string{"venv: aiperf: aiperf-0.14.0.dist-info/METADATA differs from the sha256 its RECORD states (edited after install)"}, p.Changes)

	// A file its RECORD lists gone is named too (in a venv of its own: a RECORD's
	// verdict is kept for the process).
	v = Venv{Dir: fakeVenv(t, map[string]string{"aiperf": "0.13.0"}), Lock: v.Lock}
	require.NoError(t, os.Remove(filepath.Join(v.Dir, "lib", "python3.11", "site-packages", "aiperf", "__init__.py")))
	_, problems, err := readVenv(v)
	require.NoError(t, err)
	assert.Contains(t, strings.Join(problems, "\n"), "aiperf/__init__.py, listed in its RECORD, is unreadable")
}

// A forger's .pth file and the module it imports, dropped into site-packages after
// install: no RECORD lists them, so the lock, every RECORD and the set's sha256 are as
// before, yet Python runs the .pth at every start (it rigged the correctness case). Each
// file no RECORD lists makes the venv dirty, the .pth named as one.
func TestVenvWithAPlantedFileIsDirty(t *testing.T) {
	v := Venv{Dir: fakeVenv(t, map[string]string{"aiperf": "0.13.0"}), Lock: writeLock(t, "aiperf==0.13.0\n")}
	v.Known = knownRecords(t, v.Dir)
	before, _ := venvProvenance(v, schema.Provenance{Commit: "c"})
	require.False(t, before.Dirty, "%v", before.Changes)

	site := filepath.Join(v.Dir, "lib", "python3.11", "site-packages")
	require.NoError(t, os.WriteFile(filepath.Join(site, "zz-rig.pth"), []byte("import rig\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(site, "rig.py"), []byte("import builtins\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(site, "aiperf", "rigged.pyc"), []byte("\x00"), 0o644))
	p, _ := venvProvenance(v, schema.Provenance{Commit: "c"})
	assert.Equal(t, before.VenvSHA256, p.VenvSHA256, "the installed set is the same")
	assert.True(t, p.Dirty)
	assert.Equal(t, []string{
		"venv: site-packages/aiperf/rigged.pyc is listed in no installed distribution's RECORD (put there after install)",
		"venv: site-packages/rig.py is listed in no installed distribution's RECORD (put there after install)",
		"venv: site-packages/zz-rig.pth is a .pth file no installed distribution's RECORD lists: Python runs its import lines at every start",
	}, p.Changes)
}

// The project's own venv matches its lock and the pins' known RECORDs (the venv `make
// setup` made for this test run, a clean install).
func TestProjectVenvMatchesItsLock(t *testing.T) {
	root, err := FindRoot(".")
	require.NoError(t, err)
	set, problems, err := readVenv(Venv{Dir: filepath.Join(root, ".venv"), Lock: filepath.Join(root, "scripts", "constraints.txt"),
		Known: filepath.Join(root, filepath.FromSlash(VenvRecordsFile))})
	require.NoError(t, err, "make setup makes .venv")
	assert.Empty(t, problems)
	assert.Greater(t, len(set), 100)
}

// knownRecords writes the known digests of a venv as scripts/venvrecords would from it.
func knownRecords(t *testing.T, dir string) string {
	t.Helper()
	tag, err := VenvTag(dir)
	require.NoError(t, err)
	recs, err := VenvRecords(dir)
	require.NoError(t, err)
	var b strings.Builder
	for dist, digest := range recs {
		b.WriteString(tag + " " + dist + " " + digest + "\n")
	}
	p := filepath.Join(t.TempDir(), "venv-records.txt")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	return p
}

// Another version's files under the pin's name, METADATA edited to read as the pin and
// RECORD rewritten to match: every file agrees with its RECORD, and only the pins' known
// RECORD digests (a clean install's) show it. A venv of a Python or platform the list
// knows nothing of cannot be held to it, and is dirty too.
func TestVenvWithARewrittenRecordIsDirty(t *testing.T) {
	clean := fakeVenv(t, map[string]string{"aiperf": "0.13.0"})
	known := knownRecords(t, clean)
	lock := writeLock(t, "aiperf==0.13.0\n")
	p, _ := venvProvenance(Venv{Dir: clean, Lock: lock, Known: known}, schema.Provenance{Commit: "c"})
	assert.False(t, p.Dirty, "a clean install matches its own digests: %v", p.Changes)

	v := Venv{Dir: fakeVenv(t, map[string]string{"aiperf": "0.14.0"}), Lock: lock, Known: known}
	site := filepath.Join(v.Dir, "lib", "python3.11", "site-packages")
	old, info := filepath.Join(site, "aiperf-0.14.0.dist-info"), filepath.Join(site, "aiperf-0.13.0.dist-info")
	require.NoError(t, os.Rename(old, info))
	meta := []byte("Metadata-Version: 2.1\nName: aiperf\nVersion: 0.13.0\n\nbody\n")
	require.NoError(t, os.WriteFile(filepath.Join(info, "METADATA"), meta, 0o644))
	code, err := os.ReadFile(filepath.Join(site, "aiperf", "__init__.py"))
	require.NoError(t, err)
	rec := recordLine("aiperf/__init__.py", code) + recordLine("aiperf-0.13.0.dist-info/METADATA", meta) + "aiperf-0.13.0.dist-info/RECORD,,\n"
	require.NoError(t, os.WriteFile(filepath.Join(info, "RECORD"), []byte(rec), 0o644))

	_, problems, err := readVenv(Venv{Dir: v.Dir, Lock: lock})
	require.NoError(t, err)
	assert.Empty(t, problems, "its lock and RECORD alone see the pin")
	p, _ = venvProvenance(v, schema.Provenance{Commit: "c"})
	assert.True(t, p.Dirty)
	require.Len(t, p.Changes, 1)
	assert.Regexp(t, `^venv: aiperf==0\.13\.0's installed files are not a clean install's: its RECORD digest is [0-9a-f]{12}, venv-records\.txt knows [0-9a-f]{12} \(a RECORD rewritten to match edited files\)$`, p.Changes[0])

	other := filepath.Join(t.TempDir(), "venv-records.txt")
	require.NoError(t, os.WriteFile(other, []byte("py3.12-linux-arm64 aiperf==0.13.0 "+strings.Repeat("0", 64)+"\n"), 0o644))
	p, _ = venvProvenance(Venv{Dir: clean, Lock: lock, Known: other}, schema.Provenance{Commit: "c"})
	assert.True(t, p.Dirty)
	assert.Contains(t, p.Changes[0], "venv-records.txt knows no clean install's RECORDs for py3.11-")
}

// What a clean install writes on its own (the scripts' interpreter line, bytecode,
// INSTALLER) is no part of the digest: two installs of one wheel agree.
func TestRecordDigestLeavesOutTheInstallsOwn(t *testing.T) {
	wheel := "pkg/__init__.py,sha256=AAA,10\npkg-1.0.dist-info/METADATA,sha256=BBB,20\npkg-1.0.dist-info/RECORD,,\n"
	one := wheel + "../../../bin/pkg,sha256=CCC,100\npkg/__pycache__/__init__.cpython-311.pyc,sha256=DDD,50\npkg-1.0.dist-info/INSTALLER,sha256=EEE,4\n"
	two := "pkg-1.0.dist-info/INSTALLER,sha256=EEE,4\n../../../bin/pkg,sha256=FFF,100\npkg/__pycache__/__init__.cpython-311.pyc,sha256=GGG,50\n" + wheel
	assert.Equal(t, RecordDigest([]byte(one)), RecordDigest([]byte(two)))
	assert.NotEqual(t, RecordDigest([]byte(wheel)), RecordDigest([]byte(strings.Replace(wheel, "AAA", "AAB", 1))), "a file of the wheel counts")
}

// The known RECORDs are of the pins: for each Python and platform they list, exactly the
// distributions scripts/constraints.txt pins (regenerate them with go run
// ./scripts/venvrecords when the pins change).
func TestKnownRecordsAreThePins(t *testing.T) {
	root, err := FindRoot(".")
	require.NoError(t, err)
	lock, err := readLock(filepath.Join(root, "scripts", "constraints.txt"))
	require.NoError(t, err)
	var want []string
	for name, version := range lock {
		if !venvOwn[name] {
			want = append(want, name+"=="+version)
		}
	}
	sort.Strings(want)
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(VenvRecordsFile)))
	require.NoError(t, err)
	byTag := map[string][]string{}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) == 3 && !strings.HasPrefix(f[0], "#") {
			byTag[f[0]] = append(byTag[f[0]], f[1])
		}
	}
	require.NotEmpty(t, byTag)
	for tag, dists := range byTag {
		sort.Strings(dists)
		assert.Equal(t, want, dists, tag)
	}
}
