package ingest

// RaceBudget exposes raceBudget to the external tests.
const RaceBudget = raceBudget
