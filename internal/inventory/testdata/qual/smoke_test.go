package qual

var smoke = []harness.Checkpoint{
	{Name: "qwen-image-l0-smoke", Family: "trtmc", Profile: "qwen-image-l0", Smoke: true},
}
