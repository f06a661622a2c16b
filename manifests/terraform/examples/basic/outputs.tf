output "controller_role_arn" {
  description = "The controller's IAM role."
  value       = module.tailor.controller_role_arn
}

output "node_instance_profile_name" {
  description = "The instance profile the pools use."
  value       = module.tailor.node_instance_profile_name
}

output "interruption_queue_name" {
  description = "The interruption queue, for the interruption handling that lands later."
  value       = module.tailor.interruption_queue_name
}
