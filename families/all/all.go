// Package all links every family into a program, so that what each registers is there:
// the evidence checker's rules for its evidence (internal/evidencerules). The commands
// that check evidence import it; a new family adds its import here.
package all

import (
	_ "qualkit/families/qwen_image" // backends trtmc and diffusers
	_ "qualkit/families/refedit"    // backend refedit
)
