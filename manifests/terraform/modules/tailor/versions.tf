terraform {
  # 1.11: validation blocks may refer to other variables (the IRSA inputs are required only
  # when identity is "irsa").
  required_version = ">= 1.11"

  required_providers {
    aws = {
      source = "hashicorp/aws"
      # 5.34 brought aws_eks_access_entry (aws_eks_pod_identity_association came in 5.29).
      version = "~> 5.34"
    }
    helm = {
      source  = "hashicorp/helm"
      version = "~> 2.0"
    }
  }
}
