package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// RuleRefusedCause is the StatusCause type that a refusal by the platform's admission rules
// carries (dependency protection, system-managed and platform-written objects). The refusal is a
// Forbidden whose cause message says why in one line, naming what holds the object; clients such
// as the service API recognize the refusal by this type.
const RuleRefusedCause metav1.CauseType = "platform.dev/RuleRefused"
