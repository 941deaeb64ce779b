package breakdown

// LevelCost is what a level's output cost, per GPU and in money and
// energy: goodput and throughput normalised by the GPUs that served them
// (capacity planners compare configurations per GPU), the price of a
// million output tokens at the GPUs' hourly cost, and the energy of one
// output token from the power the GPUs drew (scraped from DCGM).
type LevelCost struct {
	// NumGPUs served the level.
	NumGPUs int
	// GoodputPerGPU and OutputPerGPU are requests/s meeting the SLO and
	// output tokens/s, per GPU.
	GoodputPerGPU, OutputPerGPU float64
	// CostPerHour is one GPU's hourly cost (0: not priced); CostPerMOutput
	// the cost of 1,000,000 output tokens at the level's throughput.
	CostPerHour, CostPerMOutput float64
	// PowerWatts is the GPUs' mean total power draw (0: not scraped);
	// JoulesPerOutput the energy of one output token.
	PowerWatts, JoulesPerOutput float64
}

// Rank is the block's place among a level's breakdowns.
func (*LevelCost) Rank() int { return RankCost }
