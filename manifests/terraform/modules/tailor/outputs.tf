output "controller_role_arn" {
  description = "ARN of the controller's IAM role (the IRSA annotation eks.amazonaws.com/role-arn, or the Pod Identity association's role)."
  value       = aws_iam_role.controller.arn
}

output "controller_role_name" {
  description = "Name of the controller's IAM role."
  value       = aws_iam_role.controller.name
}

output "node_role_arn" {
  description = "ARN of the nodes' IAM role (it has the EC2_LINUX access entry)."
  value       = aws_iam_role.node.arn
}

output "node_role_name" {
  description = "Name of the nodes' IAM role."
  value       = aws_iam_role.node.name
}

output "node_instance_profile_name" {
  description = "Name of the nodes' instance profile: pools[].instanceProfile."
  value       = aws_iam_instance_profile.node.name
}

output "node_instance_profile_arn" {
  description = "ARN of the nodes' instance profile."
  value       = aws_iam_instance_profile.node.arn
}

output "interruption_queue_name" {
  description = "Name of the SQS interruption queue (the chart's settings.interruptionQueue)."
  value       = aws_sqs_queue.interruption.name
}

output "interruption_queue_arn" {
  description = "ARN of the SQS interruption queue."
  value       = aws_sqs_queue.interruption.arn
}

output "interruption_queue_url" {
  description = "URL of the SQS interruption queue."
  value       = aws_sqs_queue.interruption.url
}

output "event_rule_names" {
  description = "Names of the EventBridge rules that feed the interruption queue, by event kind."
  value       = { for kind, rule in aws_cloudwatch_event_rule.interruption : kind => rule.name }
}

output "namespace" {
  description = "Namespace of the release and the service account."
  value       = var.namespace
}

output "service_account" {
  description = "Name of the service account the controller role trusts."
  value       = var.service_account
}
