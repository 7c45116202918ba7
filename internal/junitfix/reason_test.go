package junitfix

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A broken fixture's reason as the harness writes it (whole, its fix first: issue 48) is
// the failing stage's JUnit message whole: a CI annotation shows the fix and the pin.
func TestABrokenFixtureReasonIsTheWholeMessage(t *testing.T) {
	const reason = "stage preflight failed: gate: fix: restore the fixtures from git (`git checkout -- fixtures/`); " +
		"1 requirement(s) not met: fixtures manifest /src/qualkit/fixtures/refedit/manifest.json: image pool: image house-640x382.png: " +
		"sha256 49eb23c11734cb1042f9ca2910e5ac17afedf5de6a4c1ae7bdb1e1d1e0d9c2f1, manifest pins " +
		"c97b697d1e5619896c9653464dd22971634b49bfb7362c73485af52ceb63f615 (restore the file or regenerate the manifest)"
	b, err := os.ReadFile(filepath.Join("testdata", "failed-preflight.gotestsum.xml"))
	require.NoError(t, err)
	in := strings.ReplaceAll(string(b), `qualkit.reason" value="stage preflight failed: gate: 2 requirement(s) not met:"`,
		`qualkit.reason" value="`+reason+`"`)
	require.NotEqual(t, string(b), in)
	out, err := Fix([]byte(in))
	require.NoError(t, err)
	var root Suites
	require.NoError(t, xml.Unmarshal(out, &root))
	for _, c := range root.Suites[0].Cases {
		if c.Name == "TestRefEdit/refedit-v1/preflight" {
			require.NotNil(t, c.Failure)
			assert.Equal(t, reason, c.Failure.Message)
			return
		}
	}
	t.Fatal("no preflight case")
}
