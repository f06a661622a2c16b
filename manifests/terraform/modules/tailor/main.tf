data "aws_partition" "current" {}
data "aws_region" "current" {}
data "aws_caller_identity" "current" {}

locals {
  partition  = data.aws_partition.current.partition
  region     = data.aws_region.current.region
  account_id = data.aws_caller_identity.current.account_id

  irsa = var.identity == "irsa"

  # The IAM names default to ones derived from the cluster, so that two clusters in one account
  # get their own; the preconditions on the resources catch a cluster name too long for them.
  controller_role_name = coalesce(var.controller_role_name, "${var.cluster_name}-tailor-controller")
  node_role_name       = coalesce(var.node_role_name, "${var.cluster_name}-tailor-node")
  queue_name           = coalesce(var.interruption_queue_name, "${var.cluster_name}-tailor-interruption")
}
