package harness

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
)

// Selection matches the way go test does: per slash-separated element, alternatives
// split on '|' outside brackets, and a -skip that matches a whole name.
func TestSelectionMatchesLikeGoTest(t *testing.T) {
	for _, tc := range []struct {
		run, skip, name string
		want            bool
	}{
		{"", "", "TestQwen/row/build", true},
		{"Qwen", "", "TestQwen/row/build", true},
		{"Qwen", "", "TestReferenceSmoke/row/build", false},
		{"TestQwen/row", "", "TestQwen/row/build", true},
		{"TestQwen/other", "", "TestQwen/row/build", false},
		{"TestQwen/row/build", "", "TestQwen/row/serve", false},
		{"TestQwen/row/(build|serve)", "", "TestQwen/row/serve", true},
		{"TestQwen/row/[bs]erve", "", "TestQwen/row/serve", true},
		{"Qwen|Smoke", "", "TestReferenceSmoke/row/serve", true},
		{"^TestQwen$/^row$", "", "TestQwen/row/report", true},
		{"", "serve", "TestQwen/row/serve", true}, // skip matches only top-level names whole
		{"", "TestQwen/row/serve", "TestQwen/row/serve", false},
		{"", "TestQwen/row", "TestQwen/row/serve", false},
		{"", "TestQwen/row/serve", "TestQwen/row/build", true},
	} {
		sel, err := NewSelection(tc.run, tc.skip)
		require.NoError(t, err)
		assert.Equal(t, tc.want, sel.Runs(tc.name), "-run %q -skip %q on %s", tc.run, tc.skip, tc.name)
	}
	_, err := NewSelection("(", "")
	assert.ErrorContains(t, err, `-run "("`)
}

func TestNestedMountsKeepOnePerPath(t *testing.T) {
	ro := func(p string) family.Mount { return family.Mount{Host: p, Container: p, ReadOnly: true} }
	rw := func(p string) family.Mount { return family.Mount{Host: p, Container: p} }
	got := nested([]family.Mount{rw("/w"), rw("/w/scratch"), ro("/w/ro"), ro("/b"), rw("/b"), ro("/c"), ro("/c"),
		{Host: "/src", Container: "/src"}, {Host: "/cache/x", Container: "/src/build"}, ro("/other/rw-under-ro"), ro("/other")})
	assert.Equal(t, []family.Mount{rw("/w"), rw("/b"), ro("/c"), {Host: "/src", Container: "/src"}, {Host: "/cache/x", Container: "/src/build"}, ro("/other")}, got)
}

// Selection is a re-implementation of go test's matcher (the testing package exports
// none), so it is held to the real one: a test binary of nested subtests
// (testdata/selprobe) runs under each -run/-skip pair, and every name it ran, and only
// those, is one Selection runs.
func TestSelectionAgreesWithGoTest(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "selprobe.test")
	out, err := exec.Command("go", "test", "-c", "-o", bin, "./testdata/selprobe").CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(bin, "-test.v").Output()
	require.NoError(t, err)
	all := ranNames(out)
	require.Len(t, all, 3+5+5*4, "every name, with no selection")
	for _, p := range [][2]string{
		{"Qwen", ""}, {"Qwen/double", ""}, {"^TestQwen$/^qwen-double$", ""}, {"TestQwen/qwen-image-edit-2511/build", ""},
		{"TestQwen/qwen-image-edit-2511/(build|serve)", ""}, {"TestQwen/.*/[bs]", ""}, {"Qwen|Smoke", ""},
		{"Ref", ""}, {"^TestRefEdit$/^refedit-v1$", ""}, {"TestRefEdit/refedit-v1.1", ""}, {"/report", ""},
		{"TestQwen/qwen-double/build/deeper", ""}, {"TestQwen/", ""}, {"Test[QR]e", ""},
		{"", "serve"}, {"", "TestQwen/qwen-double"}, {"", "TestQwen/qwen-double/serve"}, {"", "Qwen|Smoke"},
		{"Qwen", "TestQwen/.*/report"}, {"", "/build"}, {"", "^TestRefEdit$/^refedit-v1$/^report$"},
		{"Ref", "Smoke|Qwen"}, {"TestRefEdit/refedit", "TestRefEdit/refedit-v1$"},
	} {
		out, err := exec.Command(bin, "-test.v", "-test.run", p[0], "-test.skip", p[1]).Output()
		require.NoError(t, err, "-run %q -skip %q", p[0], p[1])
		ran := map[string]bool{}
		for _, n := range ranNames(out) {
			ran[n] = true
		}
		sel, err := NewSelection(p[0], p[1])
		require.NoError(t, err)
		for _, name := range all {
			assert.Equal(t, ran[name], sel.Runs(name), "-run %q -skip %q: %s", p[0], p[1], name)
		}
	}
}

// ranNames are the tests a -test.v output says it ran, in order.
func ranNames(out []byte) []string {
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(line, "=== RUN   "); ok {
			names = append(names, name)
		}
	}
	return names
}
