package edit

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMatchEachEdit(t *testing.T) {
	tests := map[string]string{
		"Make it GRAYSCALE":                   "grayscale",
		"convert to black and white please":   "grayscale",
		"a greyscale version":                 "grayscale",
		"monochrome":                          "grayscale",
		"sepia tone":                          "sepia",
		"make it look vintage":                "sepia",
		"invert the colours":                  "invert",
		"photo negative":                      "invert",
		"more contrast":                       "contrast",
		"warm it up":                          "warm",
		"brighten the image":                  "brighten",
		"make it brighter":                    "brighten",
		"lighten the shadows":                 "brighten",
		"posterize":                           "posterize",
		"posterise":                           "posterize",
		"rotate it":                           "rotate",
		"turn it upside down":                 "rotate",
		"mirror the picture":                  "mirror",
		"flip horizontally":                   "mirror",
		"a horizontal flip":                   "mirror",
		"flip vertically":                     "flip",
		"vertical flip":                       "flip",
		"blur the background":                 "blur",
		"soften it":                           "blur",
		"sharpen the edges":                   "sharpen",
		"pixelate the face":                   "pixelate",
		"pixelize":                            "pixelate",
		"pixelise":                            "pixelate",
		"a mosaic":                            "pixelate",
		"add film grain":                      "grain",
		"add some noise":                      "grain",
		"make it grayscale, grayscale, greys": "grayscale",
	}
	p := builtinProgram(t)
	for prompt, want := range tests {
		e, err := p.Match(prompt)
		require.NoError(t, err, prompt)
		assert.Equal(t, want, e.Name, prompt)
	}
}

func TestMatchNoneListsEveryEdit(t *testing.T) {
	p := builtinProgram(t)
	_, err := p.Match("make it look like a painting")
	require.Error(t, err)
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "prompt", ie.Param)
	assert.True(t, errors.Is(err, ErrInvalid))
	for _, e := range p.Edits() {
		assert.Contains(t, err.Error(), e.Name+" ("+strings.Join(e.Keywords, ", ")+")")
	}
	_, err = p.Match("")
	assert.ErrorContains(t, err, "no supported edit")
}

func TestMatchAmbiguousNamesTheMatches(t *testing.T) {
	p := builtinProgram(t)
	_, err := p.Match("increase contrast and brighten")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `contrast ("contrast")`)
	assert.Contains(t, err.Error(), `brighten ("brighten")`)
	assert.Contains(t, err.Error(), "asks for 2 edits")
	assert.NotContains(t, err.Error(), "sepia", "only the matches are named")
}

func TestMatchQuotesLongPromptsShort(t *testing.T) {
	_, err := builtinProgram(t).Match(strings.Repeat("z", 5000))
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 1500)
}

func TestMatchLongPromptAllocatesItsSizeNotFourTimes(t *testing.T) {
	p := builtinProgram(t)
	prompt := strings.Repeat("z", 8<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := p.Match(prompt)
	runtime.ReadMemStats(&after)
	require.Error(t, err)
	// The lower-cased copy is the one allocation the size of the prompt.
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(len(prompt))+1<<20)
}

func TestQuoteShortCutsAfter200Characters(t *testing.T) {
	assert.Equal(t, `"short"`, quoteShort("short"))
	assert.Equal(t, fmt.Sprintf("%q", strings.Repeat("é", 200)), quoteShort(strings.Repeat("é", 200)))
	assert.Equal(t, fmt.Sprintf("%q...", strings.Repeat("é", 200)), quoteShort(strings.Repeat("é", 201)))
	assert.Equal(t, `"\xff\xfe"`, quoteShort("\xff\xfe"), "invalid UTF-8 stays as its bytes")
}
