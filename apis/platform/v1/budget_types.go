package v1

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// BudgetPeriod is the calendar period a budget counts over, in UTC.
// +kubebuilder:validation:Enum=Day;Week;Month
type BudgetPeriod string

const (
	// DayBudget counts from midnight UTC.
	DayBudget BudgetPeriod = "Day"
	// WeekBudget counts from Monday, midnight UTC.
	WeekBudget BudgetPeriod = "Week"
	// MonthBudget counts from the first of the month, midnight UTC.
	MonthBudget BudgetPeriod = "Month"
)

// Money is an amount in one currency: a decimal string with at most six decimals, so that it is
// exact (costs are counted in millionths of the currency).
type Money struct {
	// amount is a decimal number such as "1.50".
	// +required
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[0-9]{1,12}(\.[0-9]{1,6})?$`
	Amount string `json:"amount"`
	// currency is an ISO 4217 code such as USD.
	// +required
	// +kubebuilder:validation:Pattern=`^[A-Z]{3}$`
	Currency string `json:"currency"`
}

// Budget bounds the model usage of its scope (a workspace, an Entry or an Agent) in a period. A
// model call that would start once the period's usage reached a limit waits on an approval
// ("continue past the budget?") instead of overrunning; approved, the run continues past that
// budget for the rest of the period.
// +kubebuilder:validation:XValidation:rule="has(self.tokens) || has(self.cost)",message="a budget sets tokens, cost or both"
type Budget struct {
	// period is Day, Week (from Monday) or Month, in UTC.
	// +required
	Period BudgetPeriod `json:"period"`
	// tokens bounds the input and output tokens of the period together.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Tokens *int64 `json:"tokens,omitempty"`
	// cost bounds the cost of the period, in the currency of its price tables (usage priced in
	// another currency does not count toward it).
	// +optional
	Cost *Money `json:"cost,omitempty"`
	// approvalExpiry says how long the approval to continue past the budget waits and what
	// happens when nobody decides in time, as a Tool's approvalExpiry; without it the approval
	// waits 24 hours, then fails the run.
	// +optional
	ApprovalExpiry *QuestionExpiry `json:"approvalExpiry,omitempty"`
}

// ModelPricing is what the models of a provider cost, in one currency.
type ModelPricing struct {
	// currency is the ISO 4217 code of every price of the provider, such as USD.
	// +required
	// +kubebuilder:validation:Pattern=`^[A-Z]{3}$`
	Currency string `json:"currency"`
	// models are the prices per model, keyed by the exact external model id the provider
	// answers with.
	// +required
	// +listType=map
	// +listMapKey=modelId
	// +kubebuilder:validation:MaxItems=256
	Models []ModelPrice `json:"models"`
}

// ModelPrice is the price of one model per million tokens, input and output apart.
type ModelPrice struct {
	// modelId is the exact external model id.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	ModelID string `json:"modelId"`
	// inputPerMillion is the price of a million input (prompt) tokens, a decimal string such as
	// "2.50".
	// +required
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[0-9]{1,9}(\.[0-9]{1,6})?$`
	InputPerMillion string `json:"inputPerMillion"`
	// outputPerMillion is the price of a million output (completion) tokens.
	// +required
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[0-9]{1,9}(\.[0-9]{1,6})?$`
	OutputPerMillion string `json:"outputPerMillion"`
}

// ValidateBudgetExpiries checks the approvalExpiry of each budget as the expiry of an Approval
// question.
func ValidateBudgetExpiries(budgets []Budget, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, b := range budgets {
		if b.ApprovalExpiry != nil {
			errs = append(errs, ValidateQuestionExpiry(b.ApprovalExpiry, ApprovalSuspend, nil, path.Index(i).Child("approvalExpiry"))...)
		}
	}
	return errs
}
