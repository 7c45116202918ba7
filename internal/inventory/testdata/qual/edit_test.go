package qual

// A stand-in for a qual/ table: the scanner reads the source, it never compiles it.

var rows = harness.NewTable(
	harness.Checkpoint{
		Name:    "refedit-default",
		Family:  "refedit",
		Model:   "refedit",
		Profile: "refedit-default",
		Reason:  "the reference family",
	},
	harness.Checkpoint{
		Name:    "qwen-image-edit-2511",
		Family:  "trtmc",
		Model:   "Qwen/Qwen-Image-Edit-2511",
		Profile: "qwen-image-edit-2511",
	},
)

// A literal without a Profile field is not a row.
var settings = harness.Bench{Measured: 5, Warmup: 1}
