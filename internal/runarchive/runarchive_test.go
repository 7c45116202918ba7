package runarchive

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, p, s string, mode os.FileMode) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(s), mode))
}

// A packed folder comes back byte for byte, executables stay executable, and packing the
// same files twice gives the same archive.
func TestPackExtractRoundTrip(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a", "run-1", "results.json"), `{"status":"qualified"}`, 0o644)
	write(t, filepath.Join(root, "a", "run-1", "row", "identity", "00-warmup-http.png"), "png bytes", 0o644)
	write(t, filepath.Join(root, "b", "run.sh"), "#!/bin/sh\n", 0o755)
	write(t, filepath.Join(root, "not-packed.txt"), "x", 0o644)
	out := filepath.Join(t.TempDir(), "runs"+Ext)
	require.NoError(t, Pack(out, root, "a", "b"))
	first, err := os.ReadFile(out)
	require.NoError(t, err)
	require.NoError(t, os.Chtimes(filepath.Join(root, "b", "run.sh"), mustTime(t, "2020-01-02T03:04:05Z"), mustTime(t, "2020-01-02T03:04:05Z")))
	require.NoError(t, Pack(out, root, "a", "b"))
	second, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, first, second, "the archive depends on the files, not their times")

	names, err := List(out)
	require.NoError(t, err)
	assert.Equal(t, []string{"a/run-1/results.json", "a/run-1/row/identity/00-warmup-http.png", "b/run.sh"}, names)

	dst := filepath.Join(t.TempDir(), "x")
	require.NoError(t, Extract(out, dst))
	b, err := os.ReadFile(filepath.Join(dst, "a", "run-1", "row", "identity", "00-warmup-http.png"))
	require.NoError(t, err)
	assert.Equal(t, "png bytes", string(b))
	st, err := os.Stat(filepath.Join(dst, "b", "run.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), st.Mode().Perm())
	assert.NoFileExists(t, filepath.Join(dst, "not-packed.txt"))

	assert.ErrorContains(t, Extract(out, dst), "is not empty", "extraction never mixes into a filled folder")
	part := filepath.Join(t.TempDir(), "part")
	require.NoError(t, Extract(out, part, "b"))
	assert.FileExists(t, filepath.Join(part, "b", "run.sh"))
	assert.NoDirExists(t, filepath.Join(part, "a"), "only the folders asked for")
	assert.ErrorContains(t, Pack(out, root, "../elsewhere"), "is not a path inside")
	require.NoError(t, os.Symlink("results.json", filepath.Join(root, "a", "run-1", "link")))
	assert.ErrorContains(t, Pack(out, root, "a"), "is not a regular file")
}

// An archive naming a path outside its root, a link or a directory entry is refused
// before anything is written outside the destination.
func TestExtractRefusesWhatIsNoLocalFile(t *testing.T) {
	for _, hdr := range []*tar.Header{
		{Typeflag: tar.TypeReg, Name: "../escape.txt", Size: 1, Mode: 0o644},
		{Typeflag: tar.TypeReg, Name: "/abs.txt", Size: 1, Mode: 0o644},
		{Typeflag: tar.TypeReg, Name: "a/./b.txt", Size: 1, Mode: 0o644},
		{Typeflag: tar.TypeSymlink, Name: "link", Linkname: "/etc/passwd"},
		{Typeflag: tar.TypeReg, Name: "big", Size: maxFile + 1, Mode: 0o644},
	} {
		t.Run(hdr.Name, func(t *testing.T) {
			var buf bytes.Buffer
			zw, err := zstd.NewWriter(&buf)
			require.NoError(t, err)
			tw := tar.NewWriter(zw)
			require.NoError(t, tw.WriteHeader(hdr))
			if hdr.Typeflag == tar.TypeReg && hdr.Size == 1 {
				_, err = tw.Write([]byte("x"))
				require.NoError(t, err)
			}
			tw.Flush()
			zw.Close()
			archive := filepath.Join(t.TempDir(), "bad"+Ext)
			require.NoError(t, os.WriteFile(archive, buf.Bytes(), 0o644))
			parent := t.TempDir()
			err = Extract(archive, filepath.Join(parent, "dst"))
			require.Error(t, err)
			assert.NoFileExists(t, filepath.Join(parent, "escape.txt"))
		})
	}
}

func mustTime(t *testing.T, s string) (tm time.Time) {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return tm
}
