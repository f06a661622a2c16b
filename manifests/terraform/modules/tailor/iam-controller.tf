# The controller's role: what the scheduler pods assume, through IRSA or EKS Pod Identity.

data "aws_iam_policy_document" "controller_trust_irsa" {
  count = local.irsa ? 1 : 0

  statement {
    actions = ["sts:AssumeRoleWithWebIdentity"]

    principals {
      type        = "Federated"
      identifiers = [var.oidc_provider_arn]
    }

    # Only Tailor's service account, and only tokens minted for STS: without the sub condition
    # any service account of the cluster could assume the role.
    condition {
      test     = "StringEquals"
      variable = "${local.oidc_issuer}:sub"
      values   = ["system:serviceaccount:${var.namespace}:${var.service_account}"]
    }
    condition {
      test     = "StringEquals"
      variable = "${local.oidc_issuer}:aud"
      values   = ["sts.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "controller_trust_pod_identity" {
  count = local.irsa ? 0 : 1

  # The service account is named by the association below, not by the trust policy.
  statement {
    actions = ["sts:AssumeRole", "sts:TagSession"]

    principals {
      type        = "Service"
      identifiers = ["pods.eks.amazonaws.com"]
    }
  }
}

locals {
  # The issuer without its scheme, as IAM names the OIDC condition keys; taken from the provider
  # ARN (…:oidc-provider/<issuer>) unless the URL is given.
  oidc_issuer = trimprefix(
    var.oidc_provider_url != "" ? var.oidc_provider_url : element(split("oidc-provider/", var.oidc_provider_arn), 1),
    "https://",
  )
}

resource "aws_iam_role" "controller" {
  name        = local.controller_role_name
  description = "Tailor's scheduler on EKS cluster ${var.cluster_name}"
  # one(...[*]) is null for the trust document not created, so neither branch indexes an empty
  # list.
  assume_role_policy = local.irsa ? one(data.aws_iam_policy_document.controller_trust_irsa[*].json) : one(data.aws_iam_policy_document.controller_trust_pod_identity[*].json)
  tags               = var.tags

  lifecycle {
    precondition {
      condition     = length(local.controller_role_name) <= 64
      error_message = "The controller role name \"${local.controller_role_name}\" is longer than IAM's 64 characters: set controller_role_name."
    }
  }
}

# The policy is the repository's document, so that the Terraform install, a hand-made role and
# the README describe the same rights. Inline rather than managed: an inline policy may be 10,240
# characters, a managed one 6,144.
resource "aws_iam_role_policy" "controller" {
  name = "TailorController"
  role = aws_iam_role.controller.id
  policy = templatefile("${path.module}/../../../iam/controller-policy.json", {
    partition     = local.partition
    region        = local.region
    account_id    = local.account_id
    cluster_name  = var.cluster_name
    node_role_arn = aws_iam_role.node.arn
    queue_arn     = aws_sqs_queue.interruption.arn
  })
}

resource "aws_eks_pod_identity_association" "controller" {
  count = local.irsa ? 0 : 1

  cluster_name    = var.cluster_name
  namespace       = var.namespace
  service_account = var.service_account
  role_arn        = aws_iam_role.controller.arn
  tags            = var.tags
}
