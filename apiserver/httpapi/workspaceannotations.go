package httpapi

// Annotations are those of the workspace's namespace (its limits and budgets), as the request
// read them.
func (rc RequestContext) Annotations() map[string]string { return rc.annotations }
