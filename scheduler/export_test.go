package scheduler

// WithAdmitLaneCap returns cfg with admission lanes of n runs each.
func WithAdmitLaneCap(cfg Config, n int) Config {
	cfg.admitLaneCap = n
	return cfg
}

// MaxPlannedAhead is maxPlannedAhead.
const MaxPlannedAhead = maxPlannedAhead
