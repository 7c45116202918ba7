package inventory

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadRejectsMalformedCheckouts(t *testing.T) {
	tests := []struct {
		name string
		dir  string
		want []string // substrings of the error: the file and what is wrong with it
	}{
		{"no directory given", "", []string{"no TRTMC checkout given"}},
		{"directory missing", "testdata/does-not-exist", []string{"testdata/does-not-exist", "no such file"}},
		{"not a checkout", "testdata/not-a-checkout", []string{"is not a TRTMC checkout", "expected tests/e2e/models/*/MODEL.toml"}},
		{"bad TOML", "testdata/bad-toml", []string{"parse tests/e2e/models/broken/MODEL.toml", "line"}},
		{"bad JSON", "testdata/bad-json", []string{"parse manifest tests/e2e/models/fam/manifests/bad.json"}},
		{"testcase without a name", "testdata/no-profile-name",
			[]string{"manifest tests/e2e/models/fam/manifests/nameless.json", `testcases[0] has no "name"`}},
		{"manifest without testcases", "testdata/no-testcases",
			[]string{"manifest tests/e2e/models/fam/manifests/empty.json", `no "testcases" array`}},
		{"listed manifest missing", "testdata/missing-manifest",
			[]string{"tests/e2e/models/fam/MODEL.toml lists test manifest \"manifests/gone.json\""}},
		{"profile defined twice", "testdata/duplicate-profile",
			[]string{`profile "same" is defined twice`, "tests/e2e/models/a/manifests/same.json", "tests/e2e/models/b/manifests/same.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.dir)
			require.Error(t, err)
			for _, s := range tt.want {
				require.ErrorContains(t, err, s)
			}
		})
	}
}
