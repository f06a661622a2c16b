terraform {
  required_version = ">= 1.11"

  # A root pins the majors it was written for; the module itself asks only for aws >= 6.0 and
  # helm >= 3.0.
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 6.0"
    }
    helm = {
      source  = "hashicorp/helm"
      version = "~> 3.0"
    }
  }
}
