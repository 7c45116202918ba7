package harness

import (
	"qualkit/internal/family"
	"qualkit/internal/schema"
)

// The family contract lives in package family (what an adapter author reads); the
// harness names its types as its own.
type (
	Family          = family.Family
	Spec            = family.Spec
	Row             = family.Row
	Env             = family.Env
	Command         = family.Command
	Mount           = family.Mount
	Tools           = family.Tools
	BuildSpec       = family.BuildSpec
	CorrectnessSpec = family.CorrectnessSpec
	CorrectnessCase = family.CorrectnessCase
	ServeSpec       = family.ServeSpec
	NativeSpec      = family.NativeSpec
	NativeBatchSpec = family.NativeBatchSpec
	NativeItem      = family.NativeItem
	IdentityCheck   = family.IdentityCheck
	Probe           = family.Probe
	Requirement     = family.Requirement
	ContainerImage  = family.ContainerImage
	QualitySpec     = family.QualitySpec
	QualityPair     = family.QualityPair
	TimingSource    = schema.TimingSource
	Deadlines       = family.Deadlines
)
