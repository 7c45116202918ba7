package evidencecheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A dirty run's changes name a file, the folder holding it, or (for a folder asked
// about) a file under it: the guide's new table file under qual/ is a change to qual/.
func TestChangesName(t *testing.T) {
	for _, c := range []struct {
		changes []string
		rel     string
		want    bool
	}{
		{[]string{" M qual/tables_test.go"}, "qual/", true},
		{[]string{"?? qual/example_test.go"}, "qual/", true},
		{[]string{"?? families/example/"}, "families/example/rules.go", true},
		{[]string{"R  old.go -> qual/new_test.go"}, "qual/", true},
		{[]string{"R  qual/old_test.go -> new.go"}, "qual/", false},
		{[]string{" M families/refedit/quality.json"}, "families/refedit/quality.json", true},
		{[]string{" M qualx/a.go"}, "qual/", false},
		{[]string{" M docs/x.md"}, "qual/", false},
		{nil, "qual/", false},
	} {
		assert.Equal(t, c.want, changesName(c.changes, c.rel), "%q in %q", c.rel, c.changes)
	}
}
