// Package selprobe is a test binary of nested subtests, run by
// TestSelectionAgreesWithGoTest to see which names go test's own -run and -skip select.
package selprobe

import "testing"

func rows(t *testing.T, names ...string) {
	for _, row := range names {
		t.Run(row, func(t *testing.T) {
			for _, st := range []string{"preflight", "build", "serve", "report"} {
				t.Run(st, func(*testing.T) {})
			}
		})
	}
}

func TestQwen(t *testing.T)           { rows(t, "qwen-image-edit-2511", "qwen-double") }
func TestReferenceSmoke(t *testing.T) { rows(t, "reference-smoke") }
func TestRefEdit(t *testing.T)        { rows(t, "refedit-v1", "refedit-v1.1") }
