# Tailor's pools find their subnets and security groups by the tag <discovery_tag_key>=<cluster
# name> unless a pool sets subnetSelector / securityGroupSelector (apis/config/v1/defaults.go).
# aws_ec2_tag manages one tag on a resource created elsewhere (the VPC, the cluster).

resource "aws_ec2_tag" "subnet_discovery" {
  for_each = toset(var.discovery_subnet_ids)

  resource_id = each.value
  key         = var.discovery_tag_key
  value       = var.cluster_name
}

resource "aws_ec2_tag" "security_group_discovery" {
  for_each = toset(var.discovery_security_group_ids)

  resource_id = each.value
  key         = var.discovery_tag_key
  value       = var.cluster_name
}
