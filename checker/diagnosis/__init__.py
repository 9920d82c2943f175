"""Why a row is red: the kinds of mistake crossgrad names, and the record a failing row
carries (`Diagnosis`). `kinds` is the model; the modules beside it find diagnoses."""
