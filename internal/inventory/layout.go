package inventory

import "fmt"

// parallelLayout reads build_args.parallel ("tp4", "cp4"), falling back to an enabled
// distributed_runtime's world size ("x4") for plugins that only declare the launcher.
func parallelLayout(t testcase) string {
	if p, _ := t.object(fieldBuildArgs)[fieldParallel].(map[string]any); p != nil {
		mode, _ := p["mode"].(string)
		switch mode {
		case "tensor_parallel":
			if n := number(p["tp_size"]); n > 1 {
				return fmt.Sprintf("tp%d", n)
			}
		case "context_parallel":
			if n := number(p["cp_size"]); n > 1 {
				return fmt.Sprintf("cp%d", n)
			}
		}
	}
	if d := t.object(fieldDistributedRun); d != nil && truthy(d["enabled"]) {
		if n := number(d[fieldDistributedWorld]); n > 1 {
			return fmt.Sprintf("x%d", n)
		}
	}
	return ""
}

// quantization reads quantization.format, or "fp8" when the profile ships FP8 scales.
func quantization(t testcase) string {
	v, _, _ := t.lookup(fieldQuantization)
	switch q := v.(type) {
	case string:
		if q != "" {
			return q
		}
	case map[string]any:
		if f, _ := q["format"].(string); f != "" {
			return f
		}
		return "unspecified"
	}
	if v, _, ok := t.lookup(fieldFP8Scales); ok && present(v) {
		return "fp8"
	}
	return ""
}
