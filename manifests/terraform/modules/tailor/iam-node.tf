# The nodes' role: what the instances Tailor launches run as, and how they join the cluster.

data "aws_iam_policy_document" "node_trust" {
  statement {
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "node" {
  name               = local.node_role_name
  description        = "Nodes Tailor launches for EKS cluster ${var.cluster_name}"
  assume_role_policy = data.aws_iam_policy_document.node_trust.json
  tags               = var.tags

  lifecycle {
    precondition {
      condition     = length(local.node_role_name) <= 64
      error_message = "The node role name \"${local.node_role_name}\" is longer than IAM's 64 characters: set node_role_name."
    }
  }
}

# What every EKS worker needs: joining and describing the cluster, the VPC CNI's ENI management,
# pulling images from ECR, and SSM for access without SSH.
resource "aws_iam_role_policy_attachment" "node" {
  for_each = toset([
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonSSMManagedInstanceCore",
  ])

  role       = aws_iam_role.node.name
  policy_arn = "arn:${local.partition}:iam::aws:policy/${each.value}"
}

# Pools name this profile (pools[].instanceProfile); the controller passes the node role to EC2
# through it.
resource "aws_iam_instance_profile" "node" {
  name = local.node_role_name
  role = aws_iam_role.node.name
  tags = var.tags
}

# Without an access entry the kubelet's credentials map to no Kubernetes identity and the node
# never registers; EC2_LINUX puts it in system:nodes (AL2023 and Bottlerocket alike).
resource "aws_eks_access_entry" "node" {
  cluster_name  = var.cluster_name
  principal_arn = aws_iam_role.node.arn
  type          = "EC2_LINUX"
  tags          = var.tags
}

# EC2 launches spot capacity as this account-wide role; an account that never used spot lacks
# it and its first spot launch fails. Not tagged with var.tags: it is the account's, shared by
# every cluster and every other spot user, not this cluster's.
resource "aws_iam_service_linked_role" "spot" {
  count = var.create_spot_service_linked_role ? 1 : 0

  aws_service_name = "spot.amazonaws.com"
}
