package harness

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	ro := func(p string) Mount { return Mount{Host: p, Container: p, ReadOnly: true} }
	rw := func(p string) Mount { return Mount{Host: p, Container: p} }
	got := nested([]Mount{rw("/w"), rw("/w/scratch"), ro("/w/ro"), ro("/b"), rw("/b"), ro("/c"), ro("/c"),
		{Host: "/src", Container: "/src"}, {Host: "/cache/x", Container: "/src/build"}, ro("/other/rw-under-ro"), ro("/other")})
	assert.Equal(t, []Mount{rw("/w"), rw("/b"), ro("/c"), {Host: "/src", Container: "/src"}, {Host: "/cache/x", Container: "/src/build"}, ro("/other")}, got)
}
