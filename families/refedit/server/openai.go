package server

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The fields of OpenAI's images.edit (the openai Python client's images.edit) beyond
// prompt, model, response_format, n, image and size. refedit's edit is a deterministic
// function of the image, the instruction and its settings: a field that could not change
// that function is accepted, checked against OpenAI's values, and reported back as
// ignored (the response's and the record's "ignored"); a field whose request refedit
// cannot honour is refused by name, never dropped. families/refedit/README.md
// ("OpenAI's images.edit") has the table.

// openAIChoices are the accepted fields with a closed set of values, OpenAI's, each
// with why it cannot change refedit's output.
var openAIChoices = map[string][]string{
	// refedit's edit is exact at every quality: there is no rendering effort to spend.
	"quality": {"auto", "low", "medium", "high", "xhigh", "max", "standard"},
	// refedit plans nothing: the instruction picks one fixed edit.
	"complexity": {"low", "medium", "high"},
	// refedit's edit is a fixed function of every input pixel.
	"input_fidelity": {"low", "high"},
	// refedit's output is always opaque RGB; transparent is refused by name.
	"background": {"auto", "opaque"},
	// PNG is refedit's one output format.
	"output_format": {"png"},
	// refedit answers with one JSON body.
	"stream": {"false"},
}

// openAIFree are accepted fields with any value: identifiers for OpenAI's abuse
// monitoring, which refedit does not have. Only their length is recorded: an identifier
// of a user does not belong in the evidence.
var openAIFree = []string{"user", "safety_identifier"}

// openAIRefused are fields refedit cannot honour, with why and what to do instead.
var openAIRefused = map[string]string{
	"mask":              "a mask restricts the edit to its transparent area; refedit edits the whole image (send the image alone)",
	"markup":            "a markup overlay guides the edit; refedit's instruction picks one fixed edit of the whole image (send the image alone)",
	"partial_images":    "partial images are streamed; refedit answers with one JSON body (leave partial_images out)",
	"frame_count":       "frames are for output_format=gif; refedit writes one PNG (leave frame_count out)",
	"frame_duration_ms": "frames are for output_format=gif; refedit writes one PNG (leave frame_duration_ms out)",
}

// maxOutputCompression bounds output_compression, a percentage in OpenAI's API.
const maxOutputCompression = 100

// isOpenAIField says whether the form reader takes the field as a text field (its value
// checked later by checkOpenAI).
func isOpenAIField(name string) bool {
	_, choice := openAIChoices[name]
	return choice || slices.Contains(openAIFree, name) || name == "output_compression"
}

// refusedField is the message for a field refedit refuses, "" when it is not one.
func refusedField(name string) string {
	if why, ok := openAIRefused[name]; ok {
		return fmt.Sprintf("%s is not supported: %s", name, why)
	}
	if name == "svg" || strings.HasPrefix(name, "svg[") {
		return fmt.Sprintf("%s is not supported: svg selects the author of output_format=svg; refedit writes PNG only (leave svg out)", name)
	}
	return ""
}

// checkOpenAI checks the accepted OpenAI fields the form carries and returns what it
// ignored: field -> the value as recorded.
func checkOpenAI(fields map[string]string) (map[string]string, *apiError) {
	ignored := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(openAIChoices)) {
		v, ok := fields[name]
		if !ok {
			continue
		}
		values := openAIChoices[name]
		got := strings.ToLower(strings.TrimSpace(v))
		if !slices.Contains(values, got) {
			if name == "background" && got == "transparent" {
				return nil, badRequest(name, `background "transparent" is not supported: refedit's output is opaque RGB; want auto or opaque`)
			}
			return nil, badRequest(name, fmt.Sprintf("%s %s is not supported: want one of %s", name, quoteBounded(v), strings.Join(values, ", ")))
		}
		ignored[name] = got
	}
	if v, ok := fields["output_compression"]; ok {
		n, err := parsePercent(v)
		if err != nil {
			return nil, badRequest("output_compression", fmt.Sprintf("output_compression %s: want an integer in 0..%d", quoteBounded(v), maxOutputCompression))
		}
		ignored["output_compression"] = fmt.Sprint(n)
	}
	for _, name := range openAIFree {
		if v, ok := fields[name]; ok {
			ignored[name] = fmt.Sprintf("%d bytes", len(v))
		}
	}
	if len(ignored) == 0 {
		return nil, nil
	}
	return ignored, nil
}

// parsePercent reads a whole number in 0..maxOutputCompression, digits only.
func parsePercent(v string) (int, error) {
	s := strings.TrimSpace(v)
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("not a whole number")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > maxOutputCompression {
		return 0, fmt.Errorf("not in 0..%d", maxOutputCompression)
	}
	return n, nil
}
