package harness

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
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

// The project's own venv matches its lock (the venv `make setup` made for this test run).
func TestProjectVenvMatchesItsLock(t *testing.T) {
	root, err := FindRoot(".")
	require.NoError(t, err)
	set, problems, err := readVenv(Venv{Dir: filepath.Join(root, ".venv"), Lock: filepath.Join(root, "scripts", "constraints.txt")})
	require.NoError(t, err, "make setup makes .venv")
	assert.Empty(t, problems)
	assert.Greater(t, len(set), 100)
}
