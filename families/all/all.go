// Package all lists every family's rules for the evidence checker (internal/judge
// Rules, each declared beside its family's code): the checker holds a row to its
// backend's. A new family adds its list here.
package all

import (
	"slices"

	qwenimage "qualkit/families/qwen_image"
	"qualkit/families/refedit"
)

// Rules are every family's, by backend.
var Rules = slices.Concat(
	qwenimage.Rules,
	refedit.Rules,
)
