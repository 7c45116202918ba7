package inventory

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden from the current output")

// assertGolden compares got with testdata/golden/<name>, or rewrites it with -update.
func assertGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing: run go test ./internal/inventory -run %s -update", t.Name())
	if !bytes.Equal(want, got) {
		require.Equal(t, string(want), string(got), "%s differs from the current output; if the change is intended, rerun with -update and review the diff", path)
	}
}

func markdown(t *testing.T, inv *Inventory) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, inv.WriteMarkdown(&b))
	return b.Bytes()
}

func byProfile(inv *Inventory) map[string]Profile {
	m := make(map[string]Profile, len(inv.Profiles))
	for _, p := range inv.Profiles {
		m[p.Profile] = p
	}
	return m
}
