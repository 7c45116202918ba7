package serving

import "qualkit/internal/schema"

// Failure is an error whose kind serving read from the engine (OOM kill, engine gone,
// stopped from outside): the harness classifies it by type, never by its words.
type Failure struct {
	Kind string // schema.KindHardware or schema.KindInfrastructure
	What string // the short reason the evidence records
	Err  error  // the whole error, with what was seen
}

func (f *Failure) Error() string { return f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }

func oomKilled(err error) error {
	return &Failure{Kind: schema.KindHardware, What: "the container was OOM-killed", Err: err}
}

func engineGone(err error) error {
	return &Failure{Kind: schema.KindInfrastructure, What: "the Docker engine is gone", Err: err}
}

func stoppedFromOutside(err error) error {
	return &Failure{Kind: schema.KindInfrastructure, What: "the server was stopped from outside the run", Err: err}
}
