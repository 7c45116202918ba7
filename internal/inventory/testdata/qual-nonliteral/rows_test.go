package qual

const profile = "qwen-image-edit-2511"

var rows = []harness.Checkpoint{
	{Name: "qwen", Family: "trtmc", Profile: profile},
}
