package expectstore

// ClaimSQL is the claim's statement, for the test that EXPLAINs it.
const ClaimSQL = claimSQL
