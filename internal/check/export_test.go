package check

// What the external test package (xcheck_dump_test.go, which imports the
// Megatron target, itself an importer of this package) needs of the internal
// test helpers.
type XCase = xcase

var (
	XcheckCorpus        = xcheckCorpus
	RandomForXcheck     = randomForXcheck
	OptionsForXcheck    = optionsForXcheck
	OptimizerForXcheck  = optimizerForXcheck
	ActivationForXcheck = activationForXcheck
	LionForXcheck       = lionForXcheck
	EmergingForXcheck   = emergingForXcheck
	BudgetForXcheck     = budgetForXcheck
	ErrorCodes          = errorCodes
)
