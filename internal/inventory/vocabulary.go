package inventory

// The TRTMC field names and values that decide a profile's class, read off the data of
// TRTMC main e9132e79.

// Manifest and testcase fields. A testcase field overrides the manifest field of the
// same name (TRTMC repeats ci_tier, user_contract, reference_precision at both levels).
const (
	fieldName             = "name"
	fieldTestcases        = "testcases"
	fieldHFID             = "hf_id"
	fieldHFRevision       = "hf_revision"
	fieldFamily           = "family"
	fieldPrecision        = "precision"
	fieldUserContract     = "user_contract"
	fieldTaskMode         = "task_mode"
	fieldTaskStrategy     = "task_strategy"
	fieldRuntimeStrategy  = "runtime_strategy"
	fieldCITier           = "ci_tier"
	fieldTraceID          = "trace_id"
	fieldModelType        = "model_type"
	fieldQuantization     = "quantization" // {"format": "fp8", ...}
	fieldFP8Scales        = "fp8_scales"   // a scales file: the profile runs FP8 weights
	fieldBuildArgs        = "build_args"
	fieldParallel         = "parallel" // build_args.parallel {"mode", "tp_size" | "cp_size"}
	fieldInputs           = "inputs"   // testcase-specific inputs object
	fieldL0Replacement    = "l0_replacement"
	fieldDistributedRun   = "distributed_runtime"
	fieldDistributedWorld = "world_size"
)

// strategyDiffusionMedia is the task strategy whose user_contract "diffusion_<output>"
// names the generated medium (image, video).
const strategyDiffusionMedia = "diffusion_media_generation"

// taskModeEdit is the testcase task_mode of an image edit.
const taskModeEdit = "edit"

// editContracts are user_contract values (HF pipeline tags) that declare editing.
var editContracts = []string{"image-to-image"}

// referenceImageInput is the MODEL.toml input_fields input that carries the reference
// image into the native task (`{ input = "image", manifest = "test_image" }`).
const referenceImageInput = "image"

// ciTierL0 marks a profile that exists to run premerge at reduced scale.
const ciTierL0 = "l0_only"

// traceTokenL0 is the token TRTMC puts in the trace_id of every L0 repro
// (IT-E2E-FLXS-L0-TP4-01), including multi-device ones whose ci_tier is multi_device.
const traceTokenL0 = "L0"

// randomWeightToken in an hf_id repository name marks random weights
// (katuni4ka/tiny-random-deepseek-v3, amd-quark/tiny-random-qwen3_moe).
const randomWeightToken = "random"

// Skip and staging markers. None of these occur on an image-edit profile of e9132e79;
// they are what TRTMC uses elsewhere (the *_exclusion_reason fields, ci_tier
// contract_only) plus the obvious spellings, so a staged edit profile is a gap, not full.
var (
	// skipFlags are booleans that, when true, say the profile is not run.
	skipFlags = []string{"skip", "skipped", "staged", "disabled"}
	// skipReasons are strings that, when non-empty, say why the profile is not run.
	skipReasons = []string{"skip_reason", "staged_reason", "disabled_reason",
		"benchmark_exclusion_reason", "model_proof_exclusion_reason"}
	// skipTiers are ci_tier values under which the end-to-end case is not executed.
	skipTiers = []string{"contract_only", "staged", "skip", "skipped", "disabled"}
	// skipStatuses are values of a "status" field that say the profile is not live.
	skipStatuses = []string{"staged", "skipped", "disabled"}
)

const fieldStatus = "status"

// Checkout layouts: at e9132e79 each model directory's MODEL.toml lists its manifests;
// in the families layout they sit under families/<family>/tests/ and name their Task.
const (
	modelsGlob       = "tests/e2e/models/*/MODEL.toml"
	manifestGlob     = "manifests/*.json" // relative to a model directory
	metadataPath     = "website/data/hf-model-metadata.json"
	familyTestsGlob  = "families/*/tests"
	familiesPremerge = "premerge"
)

// controlsNotDeclared is the supported controls of a profile whose family declares none.
const controlsNotDeclared = "not declared"
