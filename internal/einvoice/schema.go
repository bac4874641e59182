// Code generated from the Factur-X 1.0.9 / ZUGFeRD profile EN 16931 XSD
// (a subset of UN/CEFACT CII D16B in the same element order); DO NOT EDIT.
// Source: internal/einvoice/referee/official/xsd/facturx-1.09-en16931/*.xsd.

package einvoice

// schemaTypes maps a complex type to its children in schema order.
var schemaTypes = map[string][]schemaChild{
	"CreditorFinancialAccountType": {
		{"ram", "IBANID", "", 0, 1},
		{"ram", "AccountName", "", 0, 1},
		{"ram", "ProprietaryID", "", 0, 1},
	},
	"CreditorFinancialInstitutionType": {
		{"ram", "BICID", "", 1, 1},
	},
	"CrossIndustryInvoiceType": {
		{"rsm", "ExchangedDocumentContext", "ExchangedDocumentContextType", 1, 1},
		{"rsm", "ExchangedDocument", "ExchangedDocumentType", 1, 1},
		{"rsm", "SupplyChainTradeTransaction", "SupplyChainTradeTransactionType", 1, 1},
	},
	"DateTimeType": {
		{"udt", "DateTimeString", "", 1, 1},
	},
	"DateType": {
		{"udt", "DateString", "", 1, 1},
	},
	"DebtorFinancialAccountType": {
		{"ram", "IBANID", "", 1, 1},
	},
	"DocumentContextParameterType": {
		{"ram", "ID", "", 1, 1},
	},
	"DocumentLineDocumentType": {
		{"ram", "LineID", "", 1, 1},
		{"ram", "IncludedNote", "NoteType", 0, 1},
	},
	"ExchangedDocumentContextType": {
		{"ram", "BusinessProcessSpecifiedDocumentContextParameter", "DocumentContextParameterType", 0, 1},
		{"ram", "GuidelineSpecifiedDocumentContextParameter", "DocumentContextParameterType", 1, 1},
	},
	"ExchangedDocumentType": {
		{"ram", "ID", "", 1, 1},
		{"ram", "TypeCode", "", 1, 1},
		{"ram", "IssueDateTime", "DateTimeType", 1, 1},
		{"ram", "IncludedNote", "NoteType", 0, -1},
	},
	"FormattedDateTimeType": {
		{"qdt", "DateTimeString", "", 1, 1},
	},
	"HeaderTradeAgreementType": {
		{"ram", "BuyerReference", "", 0, 1},
		{"ram", "SellerTradeParty", "TradePartyType", 1, 1},
		{"ram", "BuyerTradeParty", "TradePartyType", 1, 1},
		{"ram", "SellerTaxRepresentativeTradeParty", "TradePartyType", 0, 1},
		{"ram", "SellerOrderReferencedDocument", "ReferencedDocumentType", 0, 1},
		{"ram", "BuyerOrderReferencedDocument", "ReferencedDocumentType", 0, 1},
		{"ram", "ContractReferencedDocument", "ReferencedDocumentType", 0, 1},
		{"ram", "AdditionalReferencedDocument", "ReferencedDocumentType", 0, -1},
		{"ram", "SpecifiedProcuringProject", "ProcuringProjectType", 0, 1},
	},
	"HeaderTradeDeliveryType": {
		{"ram", "ShipToTradeParty", "TradePartyType", 0, 1},
		{"ram", "ActualDeliverySupplyChainEvent", "SupplyChainEventType", 0, 1},
		{"ram", "DespatchAdviceReferencedDocument", "ReferencedDocumentType", 0, 1},
		{"ram", "ReceivingAdviceReferencedDocument", "ReferencedDocumentType", 0, 1},
	},
	"HeaderTradeSettlementType": {
		{"ram", "CreditorReferenceID", "", 0, 1},
		{"ram", "PaymentReference", "", 0, 1},
		{"ram", "TaxCurrencyCode", "", 0, 1},
		{"ram", "InvoiceCurrencyCode", "", 1, 1},
		{"ram", "PayeeTradeParty", "TradePartyType", 0, 1},
		{"ram", "SpecifiedTradeSettlementPaymentMeans", "TradeSettlementPaymentMeansType", 0, -1},
		{"ram", "ApplicableTradeTax", "TradeTaxType", 1, -1},
		{"ram", "BillingSpecifiedPeriod", "SpecifiedPeriodType", 0, 1},
		{"ram", "SpecifiedTradeAllowanceCharge", "TradeAllowanceChargeType", 0, -1},
		{"ram", "SpecifiedTradePaymentTerms", "TradePaymentTermsType", 0, 1},
		{"ram", "SpecifiedTradeSettlementHeaderMonetarySummation", "TradeSettlementHeaderMonetarySummationType", 1, 1},
		{"ram", "InvoiceReferencedDocument", "ReferencedDocumentType", 0, -1},
		{"ram", "ReceivableSpecifiedTradeAccountingAccount", "TradeAccountingAccountType", 0, 1},
	},
	"IndicatorType": {
		{"udt", "Indicator", "", 1, 1},
	},
	"LegalOrganizationType": {
		{"ram", "ID", "", 0, 1},
		{"ram", "TradingBusinessName", "", 0, 1},
	},
	"LineTradeAgreementType": {
		{"ram", "BuyerOrderReferencedDocument", "ReferencedDocumentType", 0, 1},
		{"ram", "GrossPriceProductTradePrice", "TradePriceType", 0, 1},
		{"ram", "NetPriceProductTradePrice", "TradePriceType", 1, 1},
	},
	"LineTradeDeliveryType": {
		{"ram", "BilledQuantity", "", 1, 1},
	},
	"LineTradeSettlementType": {
		{"ram", "ApplicableTradeTax", "TradeTaxType", 1, 1},
		{"ram", "BillingSpecifiedPeriod", "SpecifiedPeriodType", 0, 1},
		{"ram", "SpecifiedTradeAllowanceCharge", "TradeAllowanceChargeType", 0, -1},
		{"ram", "SpecifiedTradeSettlementLineMonetarySummation", "TradeSettlementLineMonetarySummationType", 1, 1},
		{"ram", "AdditionalReferencedDocument", "ReferencedDocumentType", 0, 1},
		{"ram", "ReceivableSpecifiedTradeAccountingAccount", "TradeAccountingAccountType", 0, 1},
	},
	"NoteType": {
		{"ram", "Content", "", 1, 1},
		{"ram", "SubjectCode", "", 0, 1},
	},
	"ProcuringProjectType": {
		{"ram", "ID", "", 1, 1},
		{"ram", "Name", "", 1, 1},
	},
	"ProductCharacteristicType": {
		{"ram", "Description", "", 1, 1},
		{"ram", "Value", "", 1, 1},
	},
	"ProductClassificationType": {
		{"ram", "ClassCode", "", 0, 1},
	},
	"ReferencedDocumentType": {
		{"ram", "IssuerAssignedID", "", 0, 1},
		{"ram", "URIID", "", 0, 1},
		{"ram", "LineID", "", 0, 1},
		{"ram", "TypeCode", "", 0, 1},
		{"ram", "Name", "", 0, 1},
		{"ram", "AttachmentBinaryObject", "", 0, 1},
		{"ram", "ReferenceTypeCode", "", 0, 1},
		{"ram", "FormattedIssueDateTime", "FormattedDateTimeType", 0, 1},
	},
	"SpecifiedPeriodType": {
		{"ram", "StartDateTime", "DateTimeType", 0, 1},
		{"ram", "EndDateTime", "DateTimeType", 0, 1},
	},
	"SupplyChainEventType": {
		{"ram", "OccurrenceDateTime", "DateTimeType", 1, 1},
	},
	"SupplyChainTradeLineItemType": {
		{"ram", "AssociatedDocumentLineDocument", "DocumentLineDocumentType", 1, 1},
		{"ram", "SpecifiedTradeProduct", "TradeProductType", 1, 1},
		{"ram", "SpecifiedLineTradeAgreement", "LineTradeAgreementType", 1, 1},
		{"ram", "SpecifiedLineTradeDelivery", "LineTradeDeliveryType", 1, 1},
		{"ram", "SpecifiedLineTradeSettlement", "LineTradeSettlementType", 1, 1},
	},
	"SupplyChainTradeTransactionType": {
		{"ram", "IncludedSupplyChainTradeLineItem", "SupplyChainTradeLineItemType", 1, -1},
		{"ram", "ApplicableHeaderTradeAgreement", "HeaderTradeAgreementType", 1, 1},
		{"ram", "ApplicableHeaderTradeDelivery", "HeaderTradeDeliveryType", 1, 1},
		{"ram", "ApplicableHeaderTradeSettlement", "HeaderTradeSettlementType", 1, 1},
	},
	"TaxRegistrationType": {
		{"ram", "ID", "", 1, 1},
	},
	"TradeAccountingAccountType": {
		{"ram", "ID", "", 1, 1},
	},
	"TradeAddressType": {
		{"ram", "PostcodeCode", "", 0, 1},
		{"ram", "LineOne", "", 0, 1},
		{"ram", "LineTwo", "", 0, 1},
		{"ram", "LineThree", "", 0, 1},
		{"ram", "CityName", "", 0, 1},
		{"ram", "CountryID", "", 1, 1},
		{"ram", "CountrySubDivisionName", "", 0, 1},
	},
	"TradeAllowanceChargeType": {
		{"ram", "ChargeIndicator", "IndicatorType", 1, 1},
		{"ram", "CalculationPercent", "", 0, 1},
		{"ram", "BasisAmount", "", 0, 1},
		{"ram", "ActualAmount", "", 1, 1},
		{"ram", "ReasonCode", "", 0, 1},
		{"ram", "Reason", "", 0, 1},
		{"ram", "CategoryTradeTax", "TradeTaxType", 0, 1},
	},
	"TradeContactType": {
		{"ram", "PersonName", "", 0, 1},
		{"ram", "DepartmentName", "", 0, 1},
		{"ram", "TelephoneUniversalCommunication", "UniversalCommunicationType", 0, 1},
		{"ram", "EmailURIUniversalCommunication", "UniversalCommunicationType", 0, 1},
	},
	"TradeCountryType": {
		{"ram", "ID", "", 1, 1},
	},
	"TradePartyType": {
		{"ram", "ID", "", 0, -1},
		{"ram", "GlobalID", "", 0, -1},
		{"ram", "Name", "", 0, 1},
		{"ram", "Description", "", 0, 1},
		{"ram", "SpecifiedLegalOrganization", "LegalOrganizationType", 0, 1},
		{"ram", "DefinedTradeContact", "TradeContactType", 0, 1},
		{"ram", "PostalTradeAddress", "TradeAddressType", 0, 1},
		{"ram", "URIUniversalCommunication", "UniversalCommunicationType", 0, 1},
		{"ram", "SpecifiedTaxRegistration", "TaxRegistrationType", 0, 2},
	},
	"TradePaymentTermsType": {
		{"ram", "Description", "", 0, 1},
		{"ram", "DueDateDateTime", "DateTimeType", 0, 1},
		{"ram", "DirectDebitMandateID", "", 0, 1},
	},
	"TradePriceType": {
		{"ram", "ChargeAmount", "", 1, 1},
		{"ram", "BasisQuantity", "", 0, 1},
		{"ram", "AppliedTradeAllowanceCharge", "TradeAllowanceChargeType", 0, 1},
	},
	"TradeProductType": {
		{"ram", "GlobalID", "", 0, 1},
		{"ram", "SellerAssignedID", "", 0, 1},
		{"ram", "BuyerAssignedID", "", 0, 1},
		{"ram", "Name", "", 1, 1},
		{"ram", "Description", "", 0, 1},
		{"ram", "ApplicableProductCharacteristic", "ProductCharacteristicType", 0, -1},
		{"ram", "DesignatedProductClassification", "ProductClassificationType", 0, -1},
		{"ram", "OriginTradeCountry", "TradeCountryType", 0, 1},
	},
	"TradeSettlementFinancialCardType": {
		{"ram", "ID", "", 1, 1},
		{"ram", "CardholderName", "", 0, 1},
	},
	"TradeSettlementHeaderMonetarySummationType": {
		{"ram", "LineTotalAmount", "", 1, 1},
		{"ram", "ChargeTotalAmount", "", 0, 1},
		{"ram", "AllowanceTotalAmount", "", 0, 1},
		{"ram", "TaxBasisTotalAmount", "", 1, 1},
		{"ram", "TaxTotalAmount", "", 0, 2},
		{"ram", "RoundingAmount", "", 0, 1},
		{"ram", "GrandTotalAmount", "", 1, 1},
		{"ram", "TotalPrepaidAmount", "", 0, 1},
		{"ram", "DuePayableAmount", "", 1, 1},
	},
	"TradeSettlementLineMonetarySummationType": {
		{"ram", "LineTotalAmount", "", 1, 1},
	},
	"TradeSettlementPaymentMeansType": {
		{"ram", "TypeCode", "", 1, 1},
		{"ram", "Information", "", 0, 1},
		{"ram", "ApplicableTradeSettlementFinancialCard", "TradeSettlementFinancialCardType", 0, 1},
		{"ram", "PayerPartyDebtorFinancialAccount", "DebtorFinancialAccountType", 0, 1},
		{"ram", "PayeePartyCreditorFinancialAccount", "CreditorFinancialAccountType", 0, 1},
		{"ram", "PayeeSpecifiedCreditorFinancialInstitution", "CreditorFinancialInstitutionType", 0, 1},
	},
	"TradeTaxType": {
		{"ram", "CalculatedAmount", "", 0, 1},
		{"ram", "TypeCode", "", 1, 1},
		{"ram", "ExemptionReason", "", 0, 1},
		{"ram", "BasisAmount", "", 0, 1},
		{"ram", "CategoryCode", "", 1, 1},
		{"ram", "ExemptionReasonCode", "", 0, 1},
		{"ram", "TaxPointDate", "DateType", 0, 1},
		{"ram", "DueDateTypeCode", "", 0, 1},
		{"ram", "RateApplicablePercent", "", 0, 1},
	},
	"UniversalCommunicationType": {
		{"ram", "URIID", "", 0, 1},
		{"ram", "CompleteNumber", "", 0, 1},
	},
}
