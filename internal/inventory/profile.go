package inventory

// Class says how a profile counts for the image-edit workload.
type Class string

const (
	// Full is a full checkpoint that consumes the reference image: it counts.
	Full Class = "full"
	// Partial is an L0, reduced or random-weight profile: listed, never counted.
	Partial Class = "partial"
	// Gap declares editing but cannot be qualified as it stands: no reference image in
	// its inputs, or marked skipped/staged.
	Gap Class = "gap"
	// Variant is another precision, quantization or parallel layout (or another
	// testcase) of a checkpoint and workload that another profile already represents.
	Variant Class = "variant"
	// OutOfGroup is every other workload (text-to-image, video, text, audio ...).
	OutOfGroup Class = "out_of_group"
)

// Classes in report order.
var Classes = []Class{Full, Partial, Gap, Variant, OutOfGroup}

func (c Class) rank() int {
	for i, x := range Classes {
		if x == c {
			return i
		}
	}
	return len(Classes)
}

// InGroup reports whether the class belongs to the image-edit group (listed in its table).
func (c Class) InGroup() bool { return c != OutOfGroup }

// WorkloadImageEdit is the workload this module qualifies.
const WorkloadImageEdit = "image_edit"

// Profile is one TRTMC testcase profile and what the inventory decided about it.
// The JSON names are the inventory.json / -json contract.
type Profile struct {
	Profile      string `json:"profile"`
	HFID         string `json:"hf_id"`
	Family       string `json:"family"`
	Revision     string `json:"revision"` // from hf-model-metadata.json, else ""
	Precision    string `json:"precision"`
	UserContract string `json:"user_contract"` // testcase value, else the manifest's
	TaskMode     string `json:"task_mode"`
	CITier       string `json:"ci_tier"`
	// NativeTask is the TRTMC Task the profile runs: its selected_task, else its manifest's
	// task; in the e9132e79 layout, which has neither, its task_strategy.
	NativeTask string `json:"native_task"`
	// Operation is what the checkout's task vocabulary maps NativeTask to (generate_image),
	// "" when the vocabulary does not know it.
	Operation string   `json:"operation"`
	Controls  []string `json:"controls"` // native task inputs the profile sets, reference image excluded
	// SupportedControls is the controls the profile's family declares it honours; "not declared"
	// while no family declares them (issue 46 adds the declarations).
	SupportedControls string `json:"supported_controls"`
	Workload          string `json:"workload"`
	Class             Class  `json:"class"`
	VariantOf         string `json:"variant_of,omitempty"`
	Reason            string `json:"reason"`
	Status            Status `json:"status"`
	StatusReason      string `json:"status_reason"`
	Evidence          string `json:"evidence,omitempty"` // results.json that proves Status, when above implemented

	Manifest       string `json:"manifest"` // relative to the checkout root
	ModelType      string `json:"model_type"`
	Runtime        string `json:"runtime"`
	Quantization   string `json:"quantization"`
	Parallel       string `json:"parallel"` // "tp4", "cp4", "" for one device
	ReferenceImage string `json:"reference_image"`
}
