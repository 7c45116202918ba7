package qwenimage

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
)

// Preflight requires the free space one build needs where the bundle and the builder's
// temporaries go (QUALKIT_TRTMC_BUNDLE_CACHE, default .cache/bundles), naming the folder,
// the free and needed bytes and what to do.
func TestRequirementsFreeSpaceForTheBuild(t *testing.T) {
	hf := fakeHFCache(t)
	need, err := diskNeed(hf)
	require.NoError(t, err)
	assert.Equal(t, "transformer", need.Largest, "the fake's two transformer shards outweigh every other component")
	assert.Greater(t, need.Bundle, need.Temp)

	cache := filepath.Join(t.TempDir(), "bundles")
	cfg := Config{Checkout: checkout(t, LayoutFamilies), HFHome: hf, BundleCache: cache}
	var asked string
	free := need.Bundle + need.Temp - 1
	stubFree(t, func(dir string) (int64, string, error) { asked = dir; return free, filepath.Dir(dir), nil })
	reqs := New(cfg).requirements(rootEnv(t), rowOf(row()))
	requireFixes(t, reqs)
	got := strings.Join(whats(reqs), "\n")
	assert.Equal(t, cache, asked)
	assert.Contains(t, got, "disk: "+cache+" has ")
	assert.Contains(t, got, "one build needs ")
	assert.Contains(t, got, "the builder's temporaries in "+filepath.Join(cache, ".tmp"))
	var fix string
	for _, r := range reqs {
		if strings.HasPrefix(r.What, "disk: ") {
			fix = r.Fix
			assert.True(t, r.Absent, "a host piece")
		}
	}
	assert.Contains(t, fix, "or set QUALKIT_TRTMC_BUNDLE_CACHE to an absolute folder on a disk with that much free")

	free = need.Bundle + need.Temp
	assert.NotContains(t, strings.Join(whats(New(cfg).requirements(rootEnv(t), rowOf(row()))), "\n"), "disk: ")
}

// QUALKIT_TRTMC_BUNDLE_CACHE moves the bundles (the harness's cache, the families case's
// --basetemp) and the builder's temporaries (TMPDIR, mounted) off $TMPDIR and Docker's
// root disk; unset, they go to the repository's .cache/bundles.
func TestBundleCacheFolder(t *testing.T) {
	cfg, err := ParseConfig(envOf(map[string]string{EnvCheckout: "/src/trtmc", EnvHFCache: "/hf", EnvBundleCache: "/big/trtmc"}))
	require.NoError(t, err)
	assert.Equal(t, "/big/trtmc", cfg.BundleCache)
	_, err = ParseConfig(envOf(map[string]string{EnvHFCache: "/hf", EnvBundleCache: "big"}))
	assert.ErrorContains(t, err, "QUALKIT_TRTMC_BUNDLE_CACHE=big is a relative path")

	root := t.TempDir()
	env := family.Env{Root: root, Work: t.TempDir()}
	cache := filepath.Join(t.TempDir(), "trtmc")
	for _, tc := range []struct{ set, want string }{{"", filepath.Join(root, ".cache", "bundles")}, {cache, cache}} {
		a := New(Config{Checkout: checkout(t, LayoutFamilies), HFHome: fakeHFCache(t), BundleCache: tc.set})
		spec, err := a.Describe(env, rowOf(row()))
		require.NoError(t, err)
		assert.Equal(t, tc.want, spec.BundleDir)
		tmp := filepath.Join(tc.want, ".tmp")
		ci, err := a.image(env)
		require.NoError(t, err)
		assert.Contains(t, ci.Mounts, family.Mount{Host: tmp, Container: tmp})
		assert.DirExists(t, tmp)
		assert.Contains(t, a.env(env), "TMPDIR="+tmp)
	}
}

func stubFree(t *testing.T, f func(string) (int64, string, error)) {
	old := freeBytes
	freeBytes = f
	t.Cleanup(func() { freeBytes = old })
}
