package harness

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
)

type nopFamily struct{ family.Family }

func validRow(name string) Checkpoint {
	return Checkpoint{Name: name, Family: "nop", Model: "m", Profile: "p", Reason: "test", Adapter: nopFamily{},
		Fixtures: "f.json", Bench: Bench{Measured: 5, Warmup: 1}}
}

func TestTableRefusesBadRows(t *testing.T) {
	assert.NotPanics(t, func() { NewTable(validRow("a"), validRow("b")) })
	assert.PanicsWithValue(t, `checkpoint "a" appears twice in the table`, func() { NewTable(validRow("a"), validRow("a")) })
	for field, mutate := range map[string]func(*Checkpoint){
		"no family":  func(c *Checkpoint) { c.Family = "" },
		"no reason":  func(c *Checkpoint) { c.Reason = "" },
		"no adapter": func(c *Checkpoint) { c.Adapter = nil },
		"name must":  func(c *Checkpoint) { c.Name = "Has Space" },
		"Measured":   func(c *Checkpoint) { c.Bench.Measured = 0 },
	} {
		c := validRow("x")
		mutate(&c)
		err := c.Validate()
		require.Error(t, err, field)
		assert.Contains(t, err.Error(), field)
	}
}

func TestReproduceCommand(t *testing.T) {
	assert.Equal(t, `go test ./qual/ -count=1 -v -run '^TestRefEdit$/^refedit-v1$'`, Reproduce("TestRefEdit/refedit-v1"))
	assert.Equal(t, `go test ./qual/ -count=1 -v -run '^TestQwen$/^qwen-image-edit-2511$'`, Reproduce("TestQwen/qwen-image-edit-2511"))
}
