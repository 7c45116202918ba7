package all

import (
	qwenimage "qualkit/families/qwen_image"
	"qualkit/families/refedit"
	"qualkit/internal/controls"
)

// SupportedControls is the controls a backend's family declares for a checkpoint, in a
// few words ("size WxH or auto, num_inference_steps 1-100, ..."): the inventory's
// "supported controls" column (TRTMC's on perf-serve, the server it publicly has). "not
// declared" when the family declares none for it.
func SupportedControls(backend, checkpoint string) string {
	switch {
	case backend == refedit.Backend:
		return controls.Summary(refedit.Controls())
	case backend == qwenimage.BackendTRTMC && checkpoint == "Qwen/Qwen-Image-Edit-2511":
		return controls.Summary(qwenimage.TRTMCControls(qwenimage.ServingPerfServe))
	}
	return controls.Summary(nil)
}
